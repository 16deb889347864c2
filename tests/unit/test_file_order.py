"""The longest-first order of test files for `make test`'s workers (tests/file_order.py)."""

from __future__ import annotations

from tests import file_order
from tests.file_order import DEFAULT, WEIGHTS, file_of, order


def _ids(nodeids: list[str]) -> list[str]:
    return order(nodeids, lambda nodeid: nodeid)


def test_heavier_files_come_first_and_each_file_stays_together_in_its_order() -> None:
    heavy, light = sorted(WEIGHTS, key=WEIGHTS.__getitem__)[-1], "tests/unit/test_tiny.py"
    items = [
        f"{light}::test_a",
        f"{heavy}::test_b",
        f"{light}::test_c",
        f"{heavy}::test_a[x]",
    ]
    assert _ids(items) == [
        f"{heavy}::test_b",
        f"{heavy}::test_a[x]",
        f"{light}::test_a",
        f"{light}::test_c",
    ]


def test_files_of_equal_weight_keep_their_collection_order() -> None:
    items = ["tests/unit/b.py::t", "tests/unit/a.py::t", "tests/unit/c.py::t", "tests/unit/a.py::u"]
    assert _ids(items) == [
        "tests/unit/b.py::t",
        "tests/unit/a.py::t",
        "tests/unit/a.py::u",
        "tests/unit/c.py::t",
    ]


def test_a_file_not_listed_weighs_the_default_and_goes_after_heavier_ones() -> None:
    assert file_order.weight("tests/unit/new.py") == DEFAULT
    assert all(w > DEFAULT for w in WEIGHTS.values())
    items = ["tests/unit/new.py::t", "tests/e2e/test_drain_order.py::t"]
    assert _ids(items) == ["tests/e2e/test_drain_order.py::t", "tests/unit/new.py::t"]


def test_the_file_of_a_node_id_is_its_path() -> None:
    assert file_of("tests/e2e/test_x.py::Class::test_y[a::b]") == "tests/e2e/test_x.py"
    assert file_of("tests/e2e/test_x.py") == "tests/e2e/test_x.py"


def test_every_weighted_file_exists() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert [p for p in WEIGHTS if not (root / p).is_file()] == []
