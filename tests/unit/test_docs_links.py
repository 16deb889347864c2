"""Every internal link of the documentation leads somewhere: the pages of docs/ and README.md are
rendered with the site's Markdown extensions (so heading anchors are the ids MkDocs gives them),
and each relative link must name an existing file and, with a `#fragment`, an id on that page."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import markdown
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

_HREF = re.compile(r"""\s(?:href|src)="([^"]*)\"""")
_ID = re.compile(r"""\sid="([^"]*)\"""")


def _extensions() -> tuple[list[str], dict[str, Any]]:
    """The Markdown extensions of mkdocs.yml, as python-markdown takes them."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    names: list[str] = []
    configs: dict[str, Any] = {}
    for entry in config.get("markdown_extensions", []):
        if isinstance(entry, str):
            names.append(entry)
        else:
            ((name, options),) = entry.items()
            names.append(name)
            configs[name] = options or {}
    return names, configs


def _render(path: Path) -> str:
    names, configs = _extensions()
    return markdown.markdown(
        path.read_text(encoding="utf-8"), extensions=names, extension_configs=configs
    )


def broken_links(pages: Iterable[Path], root: Path = ROOT) -> list[str]:
    """`page: link (why)` for every relative link of `pages` that leads nowhere (paths shown
    relative to `root`)."""
    rendered = {page.resolve(): _render(page) for page in pages}
    ids: dict[Path, set[str]] = {}

    def ids_of(page: Path) -> set[str]:
        if page not in ids:
            html = rendered.get(page)
            ids[page] = set(_ID.findall(html if html is not None else _render(page)))
        return ids[page]

    problems = []
    for page, html in rendered.items():
        for link in _HREF.findall(html):
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue  # an external address
            where = f"{page.relative_to(root)}: {link}"
            if parts.path.startswith("/"):
                problems.append(f"{where} (absolute path; use a relative link)")
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not target.exists():
                problems.append(f"{where} ({target.relative_to(root)} does not exist)")
                continue
            anchored = parts.fragment and target.suffix == ".md"
            if anchored and unquote(parts.fragment) not in ids_of(target):
                problems.append(f"{where} (no anchor #{parts.fragment} there)")
    return problems


def _documentation() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_every_internal_link_of_the_docs_and_readme_leads_somewhere() -> None:
    pages = _documentation()
    assert len(pages) > 20, "the docs/ pages were not found"
    assert broken_links(pages) == []


def test_the_readme_links_into_the_docs() -> None:
    html = _render(ROOT / "README.md")
    assert any(link.startswith("docs/") for link in _HREF.findall(html))


def test_a_missing_page_and_a_missing_anchor_are_reported(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(
        "# Title\n\n## A section\n\n"
        "[ok](b.md#other-heading) [ok too](#a-section) [web](https://karpenter.sh/)\n"
        "[gone](missing.md) [no anchor](b.md#nowhere) [own](#not-here) [abs](/b.md)\n",
        encoding="utf-8",
    )
    (tmp_path / "b.md").write_text("# B\n\n## Other heading\n", encoding="utf-8")
    problems = broken_links([tmp_path / "a.md", tmp_path / "b.md"], root=tmp_path)
    assert problems == [
        "a.md: missing.md (missing.md does not exist)",
        "a.md: b.md#nowhere (no anchor #nowhere there)",
        "a.md: #not-here (no anchor #not-here there)",
        "a.md: /b.md (absolute path; use a relative link)",
    ]
