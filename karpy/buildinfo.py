"""What `karpy version` reports: the release, the commit it was built from, Python, platform.

The commit comes from git when karpy runs from a checkout (an editable install: the package
directory sits in the repository), else from `karpy/_commit.txt`, which the wheel build
(`hatch_build.py`) writes from `KARPY_COMMIT` or `git rev-parse HEAD`, else "unknown" (a build
from a source tree without git, such as the container image built without `KARPY_COMMIT`).
"""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

from karpy import __version__

__all__ = ["COMMIT_FILE", "build_info", "commit"]

PACKAGE = Path(__file__).resolve().parent
COMMIT_FILE = PACKAGE / "_commit.txt"
UNKNOWN = "unknown"


def _git_commit(root: Path) -> str | None:
    """HEAD of the checkout at `root`."""
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def commit() -> str:
    """The commit this karpy is (checkout), or was built from (wheel), or "unknown"."""
    found = _git_commit(PACKAGE.parent)
    if found:
        return found
    try:
        baked = COMMIT_FILE.read_text(encoding="utf-8").strip()
    except OSError:
        baked = ""
    return baked or UNKNOWN


def build_info() -> dict[str, str]:
    return {
        "version": __version__,
        "commit": commit(),
        "python": platform.python_version(),
        "platform": f"{sys.platform}/{platform.machine()}",
    }
