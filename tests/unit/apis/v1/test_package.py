"""`karpy.apis.v1` loads its kinds' modules at first use of their names."""

from __future__ import annotations

import importlib
import subprocess
import sys

import karpy.apis.v1 as v1


def test_every_exported_name_is_its_module_s_object() -> None:
    for name in v1.__all__:
        value = getattr(v1, name)
        if name in ("conditions", "labels"):
            assert value is importlib.import_module(f"karpy.apis.v1.{name}")
            continue
        home = importlib.import_module(f"karpy.apis.v1.{v1._HOME[name]}")
        assert value is getattr(home, name), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        v1.NoSuchKind  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as err:
        assert "NoSuchKind" in str(err)
    else:
        raise AssertionError("expected an AttributeError")


def test_the_labels_alone_load_no_model() -> None:
    code = (
        "import sys\n"
        "from karpy.apis.v1.labels import LABEL_NODEPOOL\n"
        "from karpy.apis.v1 import labels, conditions\n"
        "print(sorted(m for m in sys.modules if m.startswith(('karpy.apis.v1.', 'pydantic'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['karpy.apis.v1.conditions', 'karpy.apis.v1.labels']"
