"""Wheel build hook: bake the commit into the wheel as `karpy/_commit.txt`.

A wheel has no git history to ask at run time, so `karpy version` reads the commit written
here: `KARPY_COMMIT` when set (an image build from a tree without `.git`), else
`git rev-parse HEAD` of the source tree, else nothing (karpy then says "unknown").
Editable installs skip it: they ask git directly.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _commit(root: str) -> str:
    baked = os.environ.get("KARPY_COMMIT", "").strip()
    if baked:
        return baked
    try:
        done = subprocess.run(
            ["git", "-C", root, "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return
        commit = _commit(self.root)
        if not commit:
            return
        folder = Path(tempfile.mkdtemp(prefix="karpy-build-"))
        path = folder / "_commit.txt"
        path.write_text(commit + "\n", encoding="utf-8")
        build_data["force_include"][str(path)] = "karpy/_commit.txt"
