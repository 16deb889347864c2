"""Node requirement algebra: sets of label values with complements, integer bounds and minValues.

Everything the scheduler decides about where a pod may go reduces to intersecting these sets: a
NodePool's requirements, an instance type's labels, a pod's node selector and affinity, a chosen
topology domain. A `Requirement` is a possibly complemented finite set of values (``In`` is a
set, ``NotIn`` a complemented set, ``Exists`` the complement of nothing, ``DoesNotExist`` the
empty set) optionally bounded by integers (``Gt``/``Lt``/``Gte``/``Lte``), so intersection is
closed and exact. Deprecated label keys are normalised on the way in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from karpy.apis.v1.labels import NORMALIZED_LABELS, WELL_KNOWN_LABELS

__all__ = [
    "OPERATORS",
    "Requirement",
    "RequirementError",
    "Requirements",
]

OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
_MAX_INT: Final = 2**63 - 1


class RequirementError(ValueError):
    """A requirement is malformed (unknown operator, non-integer bound, ...)."""


def _as_int(value: str) -> int | None:
    try:
        return int(value, 10)
    except ValueError:
        return None


class Requirement:
    """One key's allowed values. Immutable; operations return new objects."""

    __slots__ = ("_hash", "complement", "gte", "key", "lte", "min_values", "values")

    key: str
    complement: bool
    values: frozenset[str]
    gte: int | None
    lte: int | None
    min_values: int | None
    _hash: int

    def __init__(
        self,
        key: str,
        *,
        complement: bool,
        values: Iterable[str] = (),
        gte: int | None = None,
        lte: int | None = None,
        min_values: int | None = None,
    ) -> None:
        vals = frozenset(values)
        if gte is not None and lte is not None and gte > lte:
            complement, vals, gte, lte = False, frozenset(), None, None
        if not complement and (gte is not None or lte is not None):
            # A concrete set is narrowed by its bounds, which are then redundant.
            vals = frozenset(v for v in vals if _within(v, gte, lte))
            gte = lte = None
        elif complement and (gte is not None or lte is not None):
            vals = frozenset(v for v in vals if _within(v, gte, lte))
        self.key = NORMALIZED_LABELS.get(key, key)
        self.complement = complement
        self.values = vals
        self.gte = gte
        self.lte = lte
        self.min_values = min_values
        self._hash = hash((self.key, complement, vals, gte, lte, min_values))

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def new(
        cls, key: str, operator: str, values: Iterable[str] = (), *, min_values: int | None = None
    ) -> Requirement:
        """Build a requirement from a Kubernetes node-selector operator."""
        vals = [str(v) for v in values]
        if operator == "In":
            return cls(key, complement=False, values=vals, min_values=min_values)
        if operator == "NotIn":
            return cls(key, complement=True, values=vals, min_values=min_values)
        if operator == "Exists":
            return cls(key, complement=True, min_values=min_values)
        if operator == "DoesNotExist":
            return cls(key, complement=False, min_values=min_values)
        if operator in ("Gt", "Lt", "Gte", "Lte"):
            if len(vals) != 1 or _as_int(vals[0]) is None:
                raise RequirementError(
                    f"key {key!r}: operator {operator} needs exactly one integer value, got {vals}"
                )
            n = int(vals[0])
            if operator == "Gt":
                if n >= _MAX_INT:
                    return cls(key, complement=False, min_values=min_values)
                return cls(key, complement=True, gte=n + 1, min_values=min_values)
            if operator == "Lt":
                return cls(key, complement=True, lte=n - 1, min_values=min_values)
            if operator == "Gte":
                return cls(key, complement=True, gte=n, min_values=min_values)
            return cls(key, complement=True, lte=n, min_values=min_values)
        raise RequirementError(f"key {key!r}: unsupported operator {operator!r}")

    @classmethod
    def exists(cls, key: str) -> Requirement:
        return cls(key, complement=True)

    # ---- queries --------------------------------------------------------------------------

    @property
    def operator(self) -> str:
        if self.complement:
            return "NotIn" if self.values else "Exists"
        return "In" if self.values else "DoesNotExist"

    def is_empty(self) -> bool:
        """No value satisfies it (an absent label may still do: see `allows_absent`)."""
        return not self.has_any()

    def allows_absent(self) -> bool:
        """A node without this label satisfies it (NotIn and DoesNotExist)."""
        return self.operator in ("NotIn", "DoesNotExist") and self.gte is None and self.lte is None

    def has(self, value: str) -> bool:
        if self.complement:
            if value in self.values:
                return False
        elif value not in self.values:
            return False
        return _within(value, self.gte, self.lte)

    def has_any(self) -> bool:
        if not self.complement:
            return bool(self.values)
        if self.gte is None or self.lte is None:
            return True
        excluded = sum(1 for v in self.values if _within(v, self.gte, self.lte))
        return self.lte - self.gte + 1 > excluded

    def any_value(self) -> str | None:
        """One allowed value, if the set is concrete and not empty (deterministic)."""
        if not self.complement and self.values:
            return min(self.values)
        return None

    def intersection(self, other: Requirement) -> Requirement:
        if self is other:
            return self
        gte = _max_opt(self.gte, other.gte)
        lte = _min_opt(self.lte, other.lte)
        if self.complement and other.complement:
            complement, values = True, self.values | other.values
        elif self.complement:
            complement, values = False, other.values - self.values
        elif other.complement:
            complement, values = False, self.values - other.values
        else:
            complement, values = False, self.values & other.values
        return Requirement(
            self.key,
            complement=complement,
            values=values,
            gte=gte,
            lte=lte,
            min_values=_max_opt(self.min_values, other.min_values),
        )

    def intersects(self, other: Requirement) -> bool:
        """Some value satisfies both (an absent label counts when both allow it)."""
        if self.allows_absent() and other.allows_absent():
            return True
        if not self.complement and not other.complement:
            # Concrete sets carry no bounds (the constructor folds them in); isdisjoint walks
            # the smaller set: a claim's hundreds of instance types against a type's one name.
            return not self.values.isdisjoint(other.values)
        if not self.complement:
            return any(other.has(v) for v in self.values if _within(v, self.gte, self.lte))
        if not other.complement:
            return any(self.has(v) for v in other.values)
        return self.intersection(other).has_any()

    def to_dict(self) -> dict[str, Any]:
        """As a NodeSelectorRequirement (bounds become Gt/Lt; minValues kept)."""
        out: dict[str, Any]
        if self.complement and (self.gte is not None or self.lte is not None) and not self.values:
            if self.gte is not None and self.lte is None:
                out = {"key": self.key, "operator": "Gt", "values": [str(self.gte - 1)]}
            elif self.lte is not None and self.gte is None:
                out = {"key": self.key, "operator": "Lt", "values": [str(self.lte + 1)]}
            else:
                out = {"key": self.key, "operator": "Exists"}
        else:
            out = {"key": self.key, "operator": self.operator}
            if self.values:
                out["values"] = sorted(self.values)
        if self.min_values is not None:
            out["minValues"] = self.min_values
        return out

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Requirement)
            and self._hash == other._hash
            and self.key == other.key
            and self.complement == other.complement
            and self.values == other.values
            and self.gte == other.gte
            and self.lte == other.lte
            and self.min_values == other.min_values
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        bounds = ""
        if self.gte is not None:
            bounds += f" >={self.gte}"
        if self.lte is not None:
            bounds += f" <={self.lte}"
        return f"<{self.key} {self.operator} {sorted(self.values)}{bounds}>"

    def describe(self) -> str:
        d = self.to_dict()
        vals = d.get("values")
        return f"{self.key} {d['operator']}" + (f" {vals}" if vals else "")


def _within(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    n = _as_int(value)
    if n is None:
        return False
    return (gte is None or n >= gte) and (lte is None or n <= lte)


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a >= b else b


def _min_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a <= b else b


class Requirements(Mapping[str, Requirement]):
    """Requirements keyed by label key; adding a requirement intersects it with the existing one.

    Immutable once built (`add` and `union` return new objects), hashable, so it can key caches.
    A key that is absent means "anything, including no label".
    """

    __slots__ = ("_hash", "_items")

    _items: dict[str, Requirement]
    _hash: int | None

    def __init__(self, reqs: Iterable[Requirement] = ()) -> None:
        items: dict[str, Requirement] = {}
        for r in reqs:
            prev = items.get(r.key)
            items[r.key] = r if prev is None else prev.intersection(r)
        self._items = items
        self._hash = None

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Requirements:
        return cls(Requirement(k, complement=False, values=(v,)) for k, v in labels.items())

    @classmethod
    def from_node_selector_terms(cls, exprs: Iterable[Mapping[str, Any]]) -> Requirements:
        """From NodeSelectorRequirements (``{"key", "operator", "values", "minValues"}``)."""
        return cls(
            Requirement.new(
                str(e.get("key", "")),
                str(e.get("operator", "")),
                e.get("values") or (),
                min_values=e.get("minValues"),
            )
            for e in exprs
        )

    # Mapping protocol
    def __getitem__(self, key: str) -> Requirement:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: str, default: Requirement | None = None) -> Requirement | None:  # type: ignore[override]
        return self._items.get(key, default)

    def get_or_exists(self, key: str) -> Requirement:
        got = self._items.get(key)
        return got if got is not None else Requirement.exists(key)

    def add(self, *reqs: Requirement) -> Requirements:
        out = Requirements.__new__(Requirements)
        items = dict(self._items)
        for r in reqs:
            prev = items.get(r.key)
            items[r.key] = r if prev is None else prev.intersection(r)
        out._items = items
        out._hash = None
        return out

    def union(self, other: Requirements) -> Requirements:
        """All requirements of both (each key intersected); named as Karpenter's ``Add``."""
        if not other._items:
            return self
        if not self._items:
            return other
        return self.add(*other._items.values())

    def intersects(self, other: Requirements) -> str | None:
        """None when every shared key has a common value, else a reason naming the key."""
        small, big = (self, other) if len(self) <= len(other) else (other, self)
        for key, a in small._items.items():
            b = big._items.get(key)
            if b is not None and not a.intersects(b):
                mine = self._items[key]
                theirs = other._items[key]
                return f"key {key}, {theirs.describe()} not in {mine.describe()}"
        return None

    def compatible(
        self, other: Requirements, *, well_known: frozenset[str] = WELL_KNOWN_LABELS
    ) -> str | None:
        """Whether `other` (a pod's requirements) can be met by nodes with `self` (a template).

        Shared keys must intersect. A key only `other` constrains must be a well-known label
        (instance types will narrow it), or be satisfiable by a node without the label.
        Returns None when compatible, else a reason naming the key.
        """
        for key, theirs in other._items.items():
            if key in self._items:
                continue
            if key in well_known or theirs.allows_absent():
                continue
            return f"label {key!r} does not have known values"
        return self.intersects(other)

    def strict_compatible(self, other: Requirements) -> str | None:
        """Like `compatible` without the well-known allowance (for existing nodes)."""
        return self.compatible(other, well_known=frozenset())

    def labels(self) -> dict[str, str]:
        """Labels a node gets from single-valued ``In`` requirements."""
        out: dict[str, str] = {}
        for key, r in self._items.items():
            if not r.complement and len(r.values) == 1:
                out[key] = next(iter(r.values))
        return out

    def to_list(self) -> list[dict[str, Any]]:
        return [self._items[k].to_dict() for k in sorted(self._items)]

    def without(self, *keys: str) -> Requirements:
        return Requirements(r for k, r in self._items.items() if k not in keys)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.values()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirements) and self._items == other._items

    def __repr__(self) -> str:
        return f"Requirements({list(self._items.values())!r})"
