"""The informer's cache: raw objects by key, plus secondary indexes kept in step.

An index maps one object to zero or more string values (a pod to its node name, a node to its
providerID); `by_index(name, value)` then finds objects in O(1) instead of scanning. Objects in
the store are shared with every reader and must never be mutated.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from karpy.kube.resources import object_key

__all__ = [
    "INDEX_NODE_NAME",
    "INDEX_PROVIDER_ID",
    "IndexFunc",
    "ReplaceDiff",
    "Store",
    "field_indexer",
]

JSON = dict[str, Any]
IndexFunc = Callable[[JSON], Iterable[str]]
KeyFunc = Callable[[JSON], str]

INDEX_NODE_NAME = "spec.nodeName"
"""Pods by the node they are bound to."""
INDEX_PROVIDER_ID = "providerID"
"""Nodes (spec.providerID) and NodeClaims (status.providerID) by cloud instance ID."""


def field_indexer(*path: str) -> IndexFunc:
    """Index by the string at `path` (e.g. `field_indexer("spec", "nodeName")`); empty: none."""

    def index(obj: JSON) -> tuple[str, ...]:
        value: Any = obj
        for part in path:
            if not isinstance(value, dict):
                return ()
            value = value.get(part)
        return (value,) if isinstance(value, str) and value else ()

    index.__name__ = "index_" + "_".join(path)
    return index


@dataclass(slots=True)
class ReplaceDiff:
    """What a relist changed: objects added, updated (old, new) and removed."""

    added: list[JSON] = field(default_factory=list)
    updated: list[tuple[JSON, JSON]] = field(default_factory=list)
    deleted: list[JSON] = field(default_factory=list)


class Store:
    """Objects by key with named secondary indexes."""

    def __init__(
        self,
        *,
        key_func: KeyFunc = object_key,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> None:
        self.key_func = key_func
        self._items: dict[str, JSON] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self._values: dict[str, dict[str, tuple[str, ...]]] = {}
        for name, func in (indexers or {}).items():
            self.add_indexer(name, func)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[JSON]:
        return iter(list(self._items.values()))

    @property
    def indexers(self) -> Mapping[str, IndexFunc]:
        return dict(self._indexers)

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        """Register an index; existing objects are indexed at once. Same name, same func: no-op."""
        existing = self._indexers.get(name)
        if existing is not None:
            if existing is func:
                return
            raise ValueError(f"index {name!r} is already registered with another function")
        self._indexers[name] = func
        self._indices[name] = {}
        self._values[name] = {}
        for key, obj in self._items.items():
            self._index_one(name, key, obj)

    def get(self, key: str) -> JSON | None:
        return self._items.get(key)

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    def list(self) -> list[JSON]:
        return list(self._items.values())

    def index_keys(self, name: str, value: str) -> set[str]:
        """Keys of objects whose index `name` includes `value`."""
        try:
            index = self._indices[name]
        except KeyError:
            raise KeyError(f"no index named {name!r}") from None
        return set(index.get(value, ()))

    def by_index(self, name: str, value: str) -> builtins.list[JSON]:
        """Objects whose index `name` includes `value`."""
        items = self._items
        return [items[k] for k in self.index_keys(name, value) if k in items]

    def index_values(self, name: str) -> builtins.list[str]:
        """Every value currently present in index `name`."""
        return list(self._indices[name])

    def upsert(self, obj: JSON) -> JSON | None:
        """Insert or replace `obj`; returns the previous object with that key."""
        key = self.key_func(obj)
        old = self._items.get(key)
        self._items[key] = obj
        for name in self._indexers:
            self._unindex_one(name, key)
            self._index_one(name, key, obj)
        return old

    def delete(self, key: str) -> JSON | None:
        """Remove `key`; returns the removed object, or None if absent."""
        old = self._items.pop(key, None)
        if old is not None:
            for name in self._indexers:
                self._unindex_one(name, key)
        return old

    def replace(self, objs: Iterable[JSON]) -> ReplaceDiff:
        """Make the store hold exactly `objs`; report what changed (by resourceVersion)."""
        diff = ReplaceDiff()
        fresh: dict[str, JSON] = {}
        for obj in objs:
            fresh[self.key_func(obj)] = obj
        for key in [k for k in self._items if k not in fresh]:
            removed = self.delete(key)
            if removed is not None:
                diff.deleted.append(removed)
        for key, obj in fresh.items():
            old = self._items.get(key)
            if old is None:
                diff.added.append(obj)
            elif _rv(old) != _rv(obj) or _uid(old) != _uid(obj):
                diff.updated.append((old, obj))
            else:
                continue
            self.upsert(obj)
        return diff

    def _index_one(self, name: str, key: str, obj: JSON) -> None:
        values = tuple(dict.fromkeys(self._indexers[name](obj)))
        if not values:
            return
        self._values[name][key] = values
        index = self._indices[name]
        for value in values:
            index.setdefault(value, set()).add(key)

    def _unindex_one(self, name: str, key: str) -> None:
        values = self._values[name].pop(key, ())
        index = self._indices[name]
        for value in values:
            keys = index.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del index[value]


def _rv(obj: JSON) -> object:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _uid(obj: JSON) -> object:
    return (obj.get("metadata") or {}).get("uid")
