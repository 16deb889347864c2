"""A wheel carries the commit it was built from, for `karpy version` outside a checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.unit.cli.installed import REPO

UV = REPO / ".local" / "tools" / "uv" / "bin" / "uv"
pytestmark = pytest.mark.timeout(600)


def _build(out: Path, env: dict[str, str]) -> Path:
    uv = str(UV) if UV.exists() else shutil.which("uv")
    assert uv, "uv is needed to build the wheel (make install provides it)"
    done = subprocess.run(
        [uv, "build", "--wheel", "--offline", "-o", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=540,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = out.glob("karpy-*.whl")
    return wheel


def test_the_wheel_bakes_in_the_commit_and_karpy_reads_it(tmp_path: Path) -> None:
    env = {**os.environ, "KARPY_COMMIT": "0123abcd" * 5}
    wheel = _build(tmp_path / "dist", env)
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("karpy/_commit.txt").decode().strip() == "0123abcd" * 5
        archive.extractall(tmp_path / "site")
    # the unpacked wheel is outside any checkout: the baked commit is what karpy reports
    done = subprocess.run(
        [sys.executable, "-c", "from karpy.buildinfo import commit; print(commit())"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0123abcd" * 5
