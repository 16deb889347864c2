"""A reader that goes away (`karpy ... | head -1`) ends karpy quietly: status 1, no traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.unit.cli.installed import KARPY

SCENARIO = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 40
  template:
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: "1"}}}]
"""


def _with_closed_stdout(*args: str) -> subprocess.CompletedProcess[str]:
    """Run karpy with stdout a pipe whose reader is already gone: its first write fails."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [str(KARPY), *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "args",
    [("crds",), ("version", "-o", "json"), ("catalog", "export", "--provider", "kwok")],
)
def test_a_closed_pipe_exits_1_without_a_word(args: tuple[str, ...]) -> None:
    done = _with_closed_stdout(*args)
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""


def test_simulate_into_a_closed_pipe_exits_1_without_a_word(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    for output in ("table", "json", "yaml"):
        done = _with_closed_stdout("simulate", "-f", str(scenario), "-o", output)
        assert done.returncode == 1, (output, done.stderr)
        assert done.stderr == "", output


def test_head_sees_the_first_line_and_the_pipeline_ends_cleanly(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    done = subprocess.run(
        ["sh", "-c", f'"{KARPY}" simulate -f "{scenario}" -o yaml | head -1'],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr
