"""`karpy crds`: -o is a format, --output-dir a directory; `--output DIR` still works, warned."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.unit.cli.installed import REPO, karpy

CHECKED_IN = REPO / "manifests" / "crds"


def _checked_in() -> dict[str, str]:
    return {p.name: p.read_text() for p in CHECKED_IN.glob("*.yaml")}


def test_output_dir_writes_the_checked_in_files(tmp_path: Path) -> None:
    done = karpy("crds", "--output-dir", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    written = {p.name: p.read_text() for p in (tmp_path / "out").iterdir()}
    assert written == _checked_in()
    assert sorted(done.stdout.split()) == sorted(str(tmp_path / "out" / n) for n in written)
    assert done.stderr == ""


def test_stdout_yaml_by_default_and_json_with_o() -> None:
    as_yaml = karpy("crds")
    assert as_yaml.returncode == 0, as_yaml.stderr
    docs = [d for d in yaml.safe_load_all(as_yaml.stdout) if d]
    as_json = karpy("crds", "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    listed = json.loads(as_json.stdout)
    assert listed["kind"] == "List"
    assert listed["items"] == docs
    assert len(docs) == len(_checked_in())


def test_the_old_output_dir_spelling_still_writes_with_a_warning(tmp_path: Path) -> None:
    done = karpy("crds", "--output", str(tmp_path / "old"))
    assert done.returncode == 0, done.stderr
    assert {p.name for p in (tmp_path / "old").iterdir()} == set(_checked_in())
    assert "deprecated" in done.stderr and "--output-dir" in done.stderr


def test_a_format_that_is_not_one_with_output_dir_is_invalid(tmp_path: Path) -> None:
    done = karpy("crds", "-o", "xml", "--output-dir", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "-o/--output" in done.stderr and "'xml'" in done.stderr
    assert not (tmp_path / "out").exists()
