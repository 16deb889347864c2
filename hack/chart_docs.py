"""The karpy chart's values table, generated from the `# --` comments of its values.yaml (the
helm-docs convention), so the chart README that `helm show readme` prints and the docs page
never drift from the values the chart takes.

    python hack/chart_docs.py            write manifests/charts/karpy/README.md and
                                         docs/reference/helm-values.md
    python hack/chart_docs.py --check    exit 1 naming each file that is stale

A `# --` comment documents the key on the next line; following `#` lines continue it. A
comment on a map documents the whole map (its default is shown as JSON, its keys are not
listed); other maps are descended into. `# -- (int) text` names the type of a null default.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "manifests" / "charts" / "karpy"
VALUES = CHART / "values.yaml"
README_TEMPLATE = CHART / "README.md.gotmpl"
README = CHART / "README.md"
DOCS_PAGE = REPO / "docs" / "reference" / "helm-values.md"
TABLE_MARKER = "{{ values_table }}"

_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.\-/\"]+):(?P<rest>.*)$")
_TYPE_HINT = re.compile(r"^\((?P<type>[a-z]+)\)\s*")

DOCS_HEADER = """# Helm values

Every value of the `karpy` chart (`manifests/charts/karpy`). The keys are Karpenter v1.14's,
with Karpenter's defaults and meaning; a Karpenter values file works unchanged. Keys marked
"Accepted, ignored" have no meaning for karpy and are taken without effect. This page is
generated from the chart's `values.yaml` by `make generate`.

"""


@dataclass(frozen=True)
class Row:
    key: str
    type: str
    default: str
    description: str


def _documented_paths(text: str) -> dict[tuple[str, ...], str]:
    """Key path -> description, for every key preceded by a `# --` comment."""
    out: dict[tuple[str, ...], str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# --"):
            pending = [stripped.removeprefix("# --").strip()]
            continue
        if stripped.startswith("#"):
            if pending is not None:
                pending.append(stripped.removeprefix("#").strip())
            continue
        match = _KEY.match(line)
        if match is None or stripped.startswith("-"):
            pending = None if stripped else pending
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match["key"].strip('"')))
        if pending is not None:
            out[tuple(key for _, key in stack)] = " ".join(p for p in pending if p)
            pending = None
    return out


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return "string"


def _default(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"))
    return "`" + text.replace("|", "\\|") + "`"


def rows(text: str) -> list[Row]:
    """One row per documented key, and per undocumented leaf, in file order."""
    values: dict[str, Any] = yaml.safe_load(text)
    documented = _documented_paths(text)
    out: list[Row] = []

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        for key, value in node.items():
            here = (*path, key)
            description = documented.get(here)
            if description is None and isinstance(value, dict) and value:
                walk(value, here)
                continue
            description = description or ""
            kind = _type_of(value)
            hint = _TYPE_HINT.match(description)
            if hint is not None:
                kind = hint["type"]
                description = description[hint.end() :]
            out.append(Row(".".join(here), kind, _default(value), description))

    walk(values, ())
    return out


def table(text: str) -> str:
    lines = ["| Key | Type | Default | Description |", "|-----|------|---------|-------------|"]
    for row in rows(text):
        description = row.description.replace("|", "\\|")
        lines.append(f"| {row.key} | {row.type} | {row.default} | {description} |")
    return "\n".join(lines) + "\n"


def rendered() -> dict[Path, str]:
    """Each generated file and the text it must have."""
    values_table = table(VALUES.read_text())
    template = README_TEMPLATE.read_text()
    if TABLE_MARKER not in template:
        raise SystemExit(f"{README_TEMPLATE}: no {TABLE_MARKER} line to replace")
    return {
        README: template.replace(TABLE_MARKER + "\n", values_table),
        DOCS_PAGE: DOCS_HEADER + values_table,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when a file is stale")
    args = parser.parse_args(argv)
    stale = 0
    for path, text in rendered().items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                print(f"{path.relative_to(REPO)} is stale: run make generate", file=sys.stderr)
                stale = 1
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return stale


if __name__ == "__main__":
    sys.exit(main())
