"""What `karpy simulate` skips at start-up, and only when skipping it changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CODE = """
import sys
from karpy.simulation.command import _without_pydantic_plugin_discovery
_without_pydantic_plugin_discovery()
from karpy.apis.v1 import validate_nodepool
from pydantic.plugin._loader import get_plugins
print(list(get_plugins()), 'importlib.metadata' in sys.modules)
"""


def _run(extra_path: Path | None = None, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    environ.update(env)
    if extra_path is not None:
        environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(extra_path), environ.get("PYTHONPATH")) if p
        )
    return subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, check=True, env=environ
    ).stdout.strip()


def test_no_plugin_installed_skips_the_search() -> None:
    assert _run() == "[] False"


def test_an_installed_plugin_is_still_loaded(tmp_path: Path) -> None:
    (tmp_path / "karpy_test_plugin.py").write_text(
        "class Plugin:\n"
        "    def new_schema_validator(self, *args, **kwargs):\n"
        "        return None, None, None\n"
        "plugin = Plugin()\n"
    )
    info = tmp_path / "karpy_test_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: karpy-test-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\ntest = karpy_test_plugin:plugin\n")
    out = _run(tmp_path)
    assert out.startswith("[<karpy_test_plugin.Plugin object") and out.endswith(" True")
    # ... unless plugins are turned off, as pydantic allows
    assert _run(tmp_path, PYDANTIC_DISABLE_PLUGINS="__all__") == "[] False"
