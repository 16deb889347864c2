"""Store and indexes: lookups stay correct through upserts, deletes and relists."""

from __future__ import annotations

import pytest

from karpy.kube.store import INDEX_NODE_NAME, Store, field_indexer
from tests.kit import pod, served


def test_index_follows_moves_and_deletes() -> None:
    store = Store(indexers={INDEX_NODE_NAME: field_indexer("spec", "nodeName")})
    store.upsert(served(pod("a", node="n1")))
    store.upsert(served(pod("b", node="n1")))
    store.upsert(served(pod("c")))
    assert {p["metadata"]["name"] for p in store.by_index(INDEX_NODE_NAME, "n1")} == {"a", "b"}
    store.upsert(served(pod("a", node="n2"), rv="2"))
    assert store.index_keys(INDEX_NODE_NAME, "n1") == {"default/b"}
    assert store.index_keys(INDEX_NODE_NAME, "n2") == {"default/a"}
    store.delete("default/b")
    assert store.by_index(INDEX_NODE_NAME, "n1") == []
    assert "n1" not in store.index_values(INDEX_NODE_NAME)
    assert store.delete("default/missing") is None


def test_indexer_added_later_indexes_existing_objects() -> None:
    store = Store()
    store.upsert(served(pod("a", node="n1")))
    store.add_indexer("node", field_indexer("spec", "nodeName"))
    assert store.index_keys("node", "n1") == {"default/a"}
    with pytest.raises(ValueError):
        store.add_indexer("node", field_indexer("spec", "other"))
    with pytest.raises(KeyError):
        store.index_keys("nope", "x")


def test_multi_valued_index() -> None:
    store = Store(indexers={"labels": lambda o: list((o["metadata"].get("labels") or {}).values())})
    obj = served(pod("a"))
    obj["metadata"]["labels"] = {"x": "1", "y": "2", "z": "1"}
    store.upsert(obj)
    assert store.index_keys("labels", "1") == {"default/a"}
    assert store.index_keys("labels", "2") == {"default/a"}


def test_replace_reports_added_updated_and_deleted_by_resource_version() -> None:
    store = Store(indexers={INDEX_NODE_NAME: field_indexer("spec", "nodeName")})
    store.replace(
        [
            served(pod("keep", node="n1")),
            served(pod("change", node="n1")),
            served(pod("gone", node="n1")),
        ]
    )
    diff = store.replace(
        [
            served(pod("keep", node="n1")),
            served(pod("change", node="n2"), rv="5"),
            served(pod("new", node="n3")),
        ]
    )
    assert [o["metadata"]["name"] for o in diff.added] == ["new"]
    assert [(a["metadata"]["name"], b["spec"]["nodeName"]) for a, b in diff.updated] == [
        ("change", "n2")
    ]
    assert [o["metadata"]["name"] for o in diff.deleted] == ["gone"]
    assert sorted(store.keys()) == ["default/change", "default/keep", "default/new"]
    assert store.index_keys(INDEX_NODE_NAME, "n1") == {"default/keep"}


def test_recreated_object_with_same_version_string_counts_as_update() -> None:
    store = Store()
    store.upsert(served(pod("a"), rv="7"))
    replacement = served(pod("a"), rv="7")
    replacement["metadata"]["uid"] = "another"
    diff = store.replace([replacement])
    assert len(diff.updated) == 1


def test_cluster_scoped_keys() -> None:
    store = Store()
    store.upsert({"metadata": {"name": "node-1"}})
    assert store.get("node-1") is not None
    assert "node-1" in store and len(store) == 1
