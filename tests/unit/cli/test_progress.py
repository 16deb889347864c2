"""Progress on standard error only when it is a terminal: the installed program run with its
stderr on a pseudo-terminal draws it, with stderr piped prints nothing; stdout is the same."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.kit.terminal import on_a_terminal
from tests.unit.cli.installed import KARPY
from tests.unit.simulation.test_simulate_disruption import node, nodepool, pod, write

pytestmark = pytest.mark.timeout(300)


def _on_a_terminal(*args: str) -> tuple[int, str, str]:
    return on_a_terminal([str(KARPY), *args])


def _cluster(tmp_path: Path) -> str:
    return write(
        tmp_path,
        nodepool(),
        *(node(name, "c-8x-amd64-linux") for name in ("a", "b", "c", "empty")),
        *(pod(f"{name}1", name, "1") for name in ("a", "b", "c")),
    )


def test_disruption_shows_its_rounds_on_a_terminal_and_nothing_when_piped(
    tmp_path: Path,
) -> None:
    scenario = _cluster(tmp_path)
    args = ("simulate", "--disruption", "-f", scenario, "-o", "json")
    code, out, terminal = _on_a_terminal(*args)
    assert code == 0, terminal
    assert "disruption: round" in terminal, terminal
    piped = subprocess.run([str(KARPY), *args], capture_output=True, text=True, timeout=240)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == ""
    # the display never reaches stdout: the plans are the same
    mine, theirs = json.loads(out), json.loads(piped.stdout)
    assert mine["commands"] == theirs["commands"]


def test_a_plan_shows_its_steps_on_a_terminal(tmp_path: Path) -> None:
    scenario = _cluster(tmp_path)
    code, out, terminal = _on_a_terminal("simulate", "-f", scenario, "-o", "json")
    assert code == 0, terminal
    assert "planning" in terminal, terminal
    assert json.loads(out)["existingNodes"] is not None
