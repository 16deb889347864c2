"""The resourceVersions a client wrote, and which preconditions they make hopeless."""

from __future__ import annotations

from karpy.kube.ownwrites import OwnWrites

PATH = "/api/v1/namespaces/a/configmaps/x"


def rv(value: str) -> dict[str, dict[str, str]]:
    return {"metadata": {"resourceVersion": value}}


def test_only_a_precondition_older_than_the_newest_write_is_stale() -> None:
    writes = OwnWrites()
    assert writes.stale(PATH, rv("5")) is None  # nothing written yet
    writes.record(PATH, rv("10"))
    writes.record(PATH, rv("8"))  # an older answer arriving late does not go back
    assert writes.stale(PATH, rv("9")) == 10
    assert writes.stale(PATH, rv("10")) is None
    assert writes.stale(PATH, rv("11")) is None
    assert writes.stale(PATH, {"data": {}}) is None  # no precondition
    assert writes.stale(PATH, [{"op": "add"}]) is None  # a JSON patch
    assert writes.stale("/api/v1/namespaces/a/configmaps/y", rv("1")) is None
    writes.forget(PATH)
    assert writes.stale(PATH, rv("9")) is None


def test_opaque_versions_are_never_compared() -> None:
    writes = OwnWrites()
    writes.record(PATH, rv("abc"))
    assert writes.stale(PATH, rv("1")) is None
    writes.record(PATH, rv("10"))
    assert writes.stale(PATH, rv("x9")) is None


def test_the_least_recently_written_objects_are_forgotten_first() -> None:
    writes = OwnWrites(size=2)
    for name in ("a", "b", "c"):
        writes.record(name, rv("10"))
    writes.record("b", rv("11"))
    assert writes.stale("a", rv("1")) is None
    assert writes.stale("b", rv("1")) == 11 and writes.stale("c", rv("1")) == 10
