"""Run the installed `karpy` program (the console script of this virtualenv), as users do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

KARPY = Path(sys.executable).parent / "karpy"
REPO = Path(__file__).resolve().parents[3]


def karpy(
    *args: str, stdin: str | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    assert KARPY.exists(), f"{KARPY}: not installed (make install)"
    return subprocess.run(
        [str(KARPY), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        check=False,
    )
