"""Per-NodePool scheduling context: usable instance types, DaemonSet overhead, cached masks.

Built once per solve. Instance types are indexed, and every "which types could host this" answer
is a bitmask (a Python int) cached by (requirements, requests), so the thousands of questions a
large batch asks cost a dict lookup each. Allocatable per type already has the overhead of the
DaemonSets that would run on such a node subtracted, and each type keeps the host ports of just
those DaemonSets, as Karpenter groups both per instance type: a DaemonSet whose affinity picks
one architecture neither costs resources nor blocks ports on the other architecture's types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from karpy.apis.v1.labels import (
    LABEL_CAPACITY_TYPE,
    LABEL_TOPOLOGY_ZONE,
    TAINT_EFFECT_PREFER_NO_SCHEDULE,
    WELL_KNOWN_LABELS,
)
from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.scheduling.hostports import HostPort, conflicts
from karpy.scheduling.instancetypes import InstanceType, selectable_keys
from karpy.scheduling.pods import PodView
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.resources import ResourceMap
from karpy.scheduling.taints import Toleration, untolerated

__all__ = ["Dims", "PoolContext", "bits"]

_PNS_TOLERATION = Toleration(operator="Exists", effect=TAINT_EFFECT_PREFER_NO_SCHEDULE)


class Dims:
    """The resource names of one solve, in a fixed order, for integer vectors."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.index = {n: i for i, n in enumerate(self.names)}

    def vec(self, resources: Mapping[str, int]) -> tuple[int, ...]:
        out = [0] * len(self.names)
        for name, amount in resources.items():
            i = self.index.get(name)
            if i is not None:
                out[i] = amount
        return tuple(out)

    def map(self, vec: Sequence[int]) -> ResourceMap:
        return {n: int(v) for n, v in zip(self.names, vec, strict=True) if v}

    def covers(self, resources: Mapping[str, int]) -> bool:
        return all(n in self.index for n, v in resources.items() if v)


_BITS_CACHE: dict[int, tuple[int, ...]] = {}


def bits(mask: int) -> tuple[int, ...]:
    """Indices of the set bits, ascending (cached: masks repeat a lot)."""
    got = _BITS_CACHE.get(mask)
    if got is None:
        out = []
        i = 0
        m = mask
        while m:
            low = m & -m
            i = low.bit_length() - 1
            out.append(i)
            m ^= low
        got = tuple(out)
        if len(_BITS_CACHE) > 4096:
            _BITS_CACHE.clear()
        _BITS_CACHE[mask] = got
    return got


def daemon_compatible(
    pod: PodView, template_reqs: Requirements, well_known: frozenset[str]
) -> list[Requirements]:
    """The requirement alternatives of a DaemonSet pod that a template's nodes can meet."""
    return [
        alt
        for alt in pod.requirement_alternatives()
        if template_reqs.compatible(alt, well_known=well_known) is None
    ]


class PoolContext:
    """One NodePool template prepared for a solve."""

    def __init__(
        self,
        template: NodePoolTemplate,
        *,
        index: int,
        dims: Dims,
        daemons: Sequence[PodView],
    ) -> None:
        self.template = template
        self.index = index
        self.name = template.name
        self.dims = dims
        self.node_reqs = template.node_requirements
        self.taints = template.taints
        self.has_prefer_no_schedule = any(
            t.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE for t in template.taints
        )
        self.well_known = WELL_KNOWN_LABELS | selectable_keys(template.instance_types)
        self.types: list[InstanceType] = [
            it
            for it in template.instance_types
            if it.requirements.intersects(self.node_reqs) is None
            and it.cheapest_offering(self.node_reqs) is not None
        ]
        n = len(self.types)
        self.all_mask = (1 << n) - 1
        self.type_index = {t.name: i for i, t in enumerate(self.types)}
        # DaemonSet pods that run on this pool's nodes, per instance type
        daemon_reqs = template.daemon_requirements
        tolerations_extra = (_PNS_TOLERATION,)
        eligible: list[tuple[PodView, list[Requirements]]] = []
        for d in daemons:
            if untolerated(template.taints, d.tolerations + tolerations_extra) is not None:
                continue
            alts = daemon_compatible(d, daemon_reqs, self.well_known)
            if alts:
                eligible.append((d, alts))
        overhead: list[tuple[int, ...]] = []
        alloc: list[tuple[int, ...]] = []
        ports: list[frozenset[HostPort]] = []
        for it in self.types:
            total = [0] * len(dims.names)
            used: set[HostPort] = set()
            for d, alts in eligible:
                if any(it.requirements.intersects(a) is None for a in alts):
                    for name, amount in d.requests.items():
                        i = dims.index.get(name)
                        if i is not None:
                            total[i] += amount
                    used.update(d.host_ports)
            overhead.append(tuple(total))
            ports.append(frozenset(used))
            alloc.append(
                tuple(it.allocatable.get(name, 0) - total[i] for i, name in enumerate(dims.names))
            )
        self.overhead = overhead
        self.alloc = alloc
        self.daemon_ports = ports
        """Per type: the host ports of the DaemonSets that would run on it."""
        self._port_masks: dict[frozenset[HostPort], int] = {}
        self.alloc_np: npt.NDArray[np.int64] = np.array(alloc, dtype=np.int64).reshape(
            n, len(dims.names)
        )
        self.base_price = [it.price(self.node_reqs) for it in self.types]
        self.capacity = [dims.vec(it.capacity) for it in self.types]
        self.max_capacity: dict[str, int] = {}
        for it in self.types:
            for k, v in it.capacity.items():
                if v > self.max_capacity.get(k, 0):
                    self.max_capacity[k] = v
        self._compat: dict[Requirements, int] = {}
        self._fit: dict[tuple[Requirements, tuple[int, ...]], int] = {}
        self._domains: dict[tuple[int, Requirements, str], frozenset[str]] = {}
        self._prices: dict[Requirements, list[float]] = {}
        self._np_masks: dict[int, npt.NDArray[np.bool_]] = {}
        self._cts: dict[Requirements, dict[str, frozenset[str]]] = {}
        self._all_cts = frozenset(o.capacity_type for it in self.types for o in it.offerings)

    # ---- masks -----------------------------------------------------------------------------

    def compatible_mask(self, reqs: Requirements) -> int:
        """Types whose labels meet `reqs` and that have an available offering meeting them."""
        got = self._compat.get(reqs)
        if got is None:
            got = 0
            for i, it in enumerate(self.types):
                if (
                    it.requirements.intersects(reqs) is None
                    and it.cheapest_offering(reqs) is not None
                ):
                    got |= 1 << i
            self._compat[reqs] = got
        return got

    def fit_mask(self, reqs: Requirements, vec: tuple[int, ...]) -> int:
        """Types compatible with `reqs` whose allocatable (after daemons) holds `vec`."""
        key = (reqs, vec)
        got = self._fit.get(key)
        if got is None:
            compat = self.compatible_mask(reqs)
            got = 0
            alloc = self.alloc
            for i in bits(compat):
                a = alloc[i]
                if all(v <= c for v, c in zip(vec, a, strict=True)):
                    got |= 1 << i
            self._fit[key] = got
        return got

    def port_mask(self, wanted: frozenset[HostPort]) -> int:
        """Types on which no DaemonSet that would run there uses one of the `wanted` host
        ports (every type when nothing is wanted)."""
        if not wanted:
            return self.all_mask
        got = self._port_masks.get(wanted)
        if got is None:
            got = 0
            for i, used in enumerate(self.daemon_ports):
                if not conflicts(wanted, used):
                    got |= 1 << i
            self._port_masks[wanted] = got
        return got

    def np_mask(self, mask: int) -> npt.NDArray[np.bool_]:
        """The bitmask as a boolean array over the pool's types, for vectorised filters
        (cached: the same masks come back for every node of a batch)."""
        got = self._np_masks.get(mask)
        if got is None:
            got = np.zeros(len(self.types), dtype=bool)
            idx = bits(mask)
            if idx:
                got[list(idx)] = True
            if len(self._np_masks) > 10_000:
                self._np_masks.clear()
            self._np_masks[mask] = got
        return got

    def prices(self, reqs: Requirements) -> list[float]:
        """Per type: the cheapest available offering compatible with `reqs` (inf if none)."""
        got = self._prices.get(reqs)
        if got is None:
            got = [it.price(reqs) for it in self.types]
            self._prices[reqs] = got
        return got

    def capacity_types(self, reqs: Requirements, types: Sequence[InstanceType]) -> list[str]:
        """Capacity types of the available offerings of `types` compatible with `reqs`."""
        per_type = self._cts.get(reqs)
        if per_type is None:
            per_type = {
                it.name: frozenset(
                    o.capacity_type for o in it.offerings if o.available and o.compatible(reqs)
                )
                for it in self.types
            }
            self._cts[reqs] = per_type
        every = self._all_cts
        found: set[str] = set()
        for it in types:
            found |= per_type.get(it.name, frozenset())
            if len(found) == len(every):
                break
        return sorted(found)

    def domains(self, mask: int, reqs: Requirements, key: str) -> frozenset[str]:
        """Values of `key` a node from these types could have, given `reqs`."""
        cache_key = (mask, reqs, key)
        got = self._domains.get(cache_key)
        if got is not None:
            return got
        combined = self.node_reqs.union(reqs)
        allowed = combined.get(key)
        values: set[str] = set()
        for i in bits(mask):
            it = self.types[i]
            if key in (LABEL_TOPOLOGY_ZONE, LABEL_CAPACITY_TYPE):
                for o in it.offerings:
                    if o.available and o.compatible(combined):
                        values.add(o.zone if key == LABEL_TOPOLOGY_ZONE else o.capacity_type)
                continue
            tr = it.requirements.get(key)
            if tr is not None and not tr.complement:
                values.update(v for v in tr.values if allowed is None or allowed.has(v))
            elif allowed is not None and not allowed.complement:
                values.update(v for v in allowed.values if tr is None or tr.has(v))
        got = frozenset(values)
        self._domains[cache_key] = got
        return got

    def tolerated(self, tolerations: Sequence[Toleration]) -> str | None:
        bad = untolerated(self.taints, tolerations)
        return None if bad is None else f"did not tolerate taint {bad}"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "types": len(self.types)}
