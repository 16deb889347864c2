"""`karpy`, `karpy --help`, `karpy --version` and `karpy version`, run as the installed program."""

from __future__ import annotations

import json
import platform
import subprocess

import yaml

from karpy import __version__
from tests.unit.cli.installed import REPO, karpy


def test_bare_karpy_prints_the_help_and_exits_0() -> None:
    done = karpy()
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: karpy")
    for name in ("run", "simulate", "catalog", "crds", "version"):
        assert f"\n    {name} " in done.stdout
    assert done.stderr == ""


def test_help_carries_the_exit_status_table() -> None:
    for args in (("--help",), ("simulate", "--help"), ("crds", "-h")):
        done = karpy(*args)
        assert done.returncode == 0, (args, done.stderr)
        table = done.stdout[done.stdout.index("exit status:") :]
        codes = [line.split()[0] for line in table.splitlines()[1:] if line.strip()]
        assert codes == ["0", "1", "2", "3"], (args, table)


def test_version_flag_exits_0() -> None:
    done = karpy("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"karpy {__version__}"


def test_version_json_names_release_commit_python_and_platform() -> None:
    done = karpy("version", "-o", "json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert set(info) == {"version", "commit", "python", "platform"}
    assert info["version"] == __version__
    assert info["python"] == platform.python_version()
    assert info["platform"].endswith("/" + platform.machine())
    # run from this checkout (an editable install): the commit is the checkout's HEAD
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert info["commit"] == head


def test_version_text_and_yaml_say_the_same() -> None:
    as_json = json.loads(karpy("version", "-o", "json").stdout)
    as_yaml = karpy("version", "-o", "yaml")
    assert as_yaml.returncode == 0, as_yaml.stderr
    assert yaml.safe_load(as_yaml.stdout) == as_json
    text = karpy("version")
    assert text.returncode == 0
    assert text.stdout.splitlines() == [
        f"karpy {as_json['version']}",
        f"commit: {as_json['commit']}",
        f"python: {as_json['python']}",
        f"platform: {as_json['platform']}",
    ]


def test_an_unknown_output_format_is_invalid_input() -> None:
    done = karpy("version", "-o", "xml")
    assert done.returncode == 2
    assert "-o/--output" in done.stderr and "xml" in done.stderr
    assert done.stdout == ""
