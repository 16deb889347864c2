"""An independent reference optimum for small batches: a slot MILP solved by scipy's HiGHS.

The property test (test_exact.py) owns it; the optimality benchmark borrows it. It shares no
code with the planner (karpy/scheduling/engine/exact): it reads the raw pod dicts, the instance
types and the existing nodes, parses the few quantities the generators use, and models each
node slot as one purchase (type, zone, capacity type) with pods counted per class of identical
pods. It covers what the optimality benchmark and the property test generate: requests, zone
and capacity-type node selectors, DaemonSet overhead, instance-type overhead, unavailable
offerings, hostname anti-affinity (matchLabels), hostname spread (maxSkew per node), zonal
spread (over the zones of the catalogue and the existing nodes that the pod's zone selector
allows, minDomains; no bound pods) and existing nodes with room. Slots are ordered by price (dearest
first) to break their symmetry. `optimum` returns the cheapest plan's price, or None when
HiGHS does not prove it within the time limit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp  # type: ignore[import-untyped]
from scipy.sparse import coo_matrix  # type: ignore[import-untyped]

from karpy.scheduling.engine import ExistingNode
from karpy.scheduling.instancetypes import InstanceType

ZONE = "topology.kubernetes.io/zone"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
HOSTNAME = "kubernetes.io/hostname"
_UNITS = {"m": 1e-3, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "k": 1e3, "M": 1e6, "G": 1e9}


def quantity(text: str | int, *, milli: bool = False) -> int:
    """'1500m' -> 1500 (milli) or 2 (rounded up); '1Gi' -> 1073741824."""
    s = str(text)
    scale = 1.0
    for suffix in sorted(_UNITS, key=len, reverse=True):
        if s.endswith(suffix):
            s, scale = s[: -len(suffix)], _UNITS[suffix]
            break
    value = float(s) * scale * (1000 if milli else 1)
    return math.ceil(value - 1e-9)


def requests(raw: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {"pods": 1}
    for c in raw["spec"].get("containers", []):
        for k, v in (c.get("resources", {}).get("requests") or {}).items():
            out[k] = out.get(k, 0) + quantity(v, milli=k == "cpu")
    return out


def _anti_terms(raw: Mapping[str, Any]) -> list[dict[str, str]]:
    terms = (
        (raw["spec"].get("affinity") or {})
        .get("podAntiAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", [])
    )
    return [t["labelSelector"]["matchLabels"] for t in terms if t["topologyKey"] == HOSTNAME]


def _spreads(raw: Mapping[str, Any], key: str = HOSTNAME) -> list[tuple[dict[str, str], int]]:
    return [
        (sc["labelSelector"]["matchLabels"], int(sc["maxSkew"]))
        for sc in raw["spec"].get("topologySpreadConstraints") or []
        if sc["topologyKey"] == key
    ]


def _min_domains(raw: Mapping[str, Any]) -> list[int | None]:
    """minDomains of the pod's zonal spreads, in `_spreads(raw, ZONE)`'s order."""
    return [
        sc.get("minDomains")
        for sc in raw["spec"].get("topologySpreadConstraints") or []
        if sc["topologyKey"] == ZONE
    ]


def _selects(selector: Mapping[str, str], raw: Mapping[str, Any]) -> bool:
    labels = raw["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


@dataclass
class _Class:
    raw: dict[str, Any]
    count: int
    need: dict[str, int]


@dataclass
class _Host:
    price: float  # 0 for an existing node
    room: dict[str, int]
    labels: dict[str, str]
    existing: bool


def _classes(raws: Sequence[dict[str, Any]]) -> list[_Class]:
    groups: dict[str, _Class] = {}
    for r in raws:
        key = json.dumps([r["spec"], r["metadata"].get("labels")], sort_keys=True)
        if key in groups:
            groups[key].count += 1
        else:
            groups[key] = _Class(r, 1, requests(r))
    return list(groups.values())


def _admits(c: _Class, labels: Mapping[str, str]) -> bool:
    selector = c.raw["spec"].get("nodeSelector") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _hosts(
    classes: Sequence[_Class],
    types: Sequence[InstanceType],
    existing: Sequence[ExistingNode],
    daemons: Sequence[dict[str, Any]],
) -> tuple[list[_Host], list[_Host]]:
    """Purchases (of those with the same room admitting the same classes, in the same zone when
    a zonal spread counts zones, the cheapest) and existing nodes."""
    ds: dict[str, int] = {}
    for d in daemons:
        for k, v in requests(d).items():
            ds[k] = ds.get(k, 0) + v
    bought: dict[str, _Host] = {}
    for it in types:
        room = {k: v - it.overhead.get(k, 0) - ds.get(k, 0) for k, v in it.capacity.items()}
        for o in it.offerings:
            if not o.available:
                continue
            labels = {ZONE: o.zone, CAPACITY_TYPE: o.capacity_type}
            admitted = [i for i, c in enumerate(classes) if _admits(c, labels)]
            zone = o.zone if any(_spreads(c.raw, ZONE) for c in classes) else ""
            key = json.dumps([room, admitted, zone], sort_keys=True)
            if key not in bought or o.price < bought[key].price:
                bought[key] = _Host(o.price, room, labels, existing=False)
    old = [
        _Host(
            0.0,
            {k: v - ds.get(k, 0) for k, v in n.allocatable.items()},
            dict(n.labels),
            existing=True,
        )
        for n in existing
    ]
    return list(bought.values()), old


def optimum(
    raws: Sequence[dict[str, Any]],
    types: Sequence[InstanceType],
    existing: Sequence[ExistingNode] = (),
    daemons: Sequence[dict[str, Any]] = (),
    *,
    upper: float | None = None,
    seconds: float = 30.0,
) -> float | None:
    """The cheapest price of new nodes for `raws`, or None when not proven within `seconds`.
    `upper` (the price of some feasible plan) bounds the number of slots and cuts the search."""
    classes = _classes(raws)
    offers, old = _hosts(classes, types, existing, daemons)
    if not classes:
        return 0.0
    pods = sum(c.count for c in classes)
    cheapest = min((h.price for h in offers), default=0.0)
    slots = pods
    if upper is not None and cheapest > 0:
        slots = min(pods, math.floor(upper / cheapest + 1e-9))
    keys = sorted({k for c in classes for k in c.need})
    nc, nk, no = len(classes), len(offers), len(old)
    clash = [
        [
            any(_selects(t, b.raw) for t in _anti_terms(a.raw))
            or any(_selects(t, a.raw) for t in _anti_terms(b.raw))
            for b in classes
        ]
        for a in classes
    ]
    # columns: y[s,k] buy, x[c,h] pods, u[c,h] class present, for hosts h = slots then old
    hosts = slots + no
    ny, nx = slots * nk, nc * hosts

    def y(s: int, k: int) -> int:
        return s * nk + k

    def x(c: int, h: int) -> int:
        return ny + c * hosts + h

    def u(c: int, h: int) -> int:
        return ny + nx + c * hosts + h

    # zonal spreads: w[c,s,z] pods of a spread class on slot s in zone z
    zones = sorted({o.labels[ZONE] for o in offers} | {h.labels[ZONE] for h in old})
    zonal = [c for c, cls in enumerate(classes) if _spreads(cls.raw, ZONE)]
    nw = len(zonal) * slots * len(zones)

    def w(i: int, s: int, z: int) -> int:
        return ny + 2 * nx + (i * slots + s) * len(zones) + z

    # then per spread and zone: p (pods it counts there), used (binary); and the spread's low
    spread_terms = [
        (c, t, least)
        for c in zonal
        for t, least in zip(
            _spreads(classes[c].raw, ZONE), _min_domains(classes[c].raw), strict=True
        )
    ]
    base = ny + 2 * nx + nw
    per_term = 2 * len(zones) + 1
    n = base + per_term * len(spread_terms)
    cost = np.zeros(n)
    ub = np.zeros(n)
    for s in range(slots):
        for k, o in enumerate(offers):
            cost[y(s, k)] = o.price
            ub[y(s, k)] = 1
    for c, cls in enumerate(classes):
        cap = 1 if clash[c][c] else cls.count
        for h in range(hosts):
            if h >= slots and not _admits(cls, old[h - slots].labels):
                continue
            ub[x(c, h)] = cap
            ub[u(c, h)] = 1
    rows: list[tuple[dict[int, float], float, float]] = []
    for s in range(slots):
        buy = {y(s, k): 1.0 for k in range(nk)}
        rows.append((buy, 0, 1))
        if s + 1 < slots:
            # used slots first, dearest first
            rows.append(({**buy, **{y(s + 1, k): -1.0 for k in range(nk)}}, 0, math.inf))
            price = {y(s, k): o.price for k, o in enumerate(offers)}
            price.update({y(s + 1, k): -o.price for k, o in enumerate(offers)})
            rows.append((price, 0, math.inf))
    for h in range(hosts):
        for key in keys:
            row = {x(c, h): float(cls.need.get(key, 0)) for c, cls in enumerate(classes)}
            if h < slots:
                row.update({y(h, k): -float(o.room.get(key, 0)) for k, o in enumerate(offers)})
                rows.append((row, -math.inf, 0))
            else:
                rows.append((row, -math.inf, float(old[h - slots].room.get(key, 0))))
        for c, cls in enumerate(classes):
            rows.append(({x(c, h): 1.0, u(c, h): -float(cls.count)}, -math.inf, 0))
            if h < slots:
                # a slot hosts a class only if what it buys admits the class
                row = {u(c, h): 1.0}
                row.update({y(h, k): -1.0 for k, o in enumerate(offers) if _admits(cls, o.labels)})
                rows.append((row, -math.inf, 0))
            for d in range(c + 1, nc):
                if clash[c][d]:
                    rows.append(({u(c, h): 1.0, u(d, h): 1.0}, -math.inf, 1))
            for selector, skew in _spreads(cls.raw):
                counted = [d for d, other in enumerate(classes) if _selects(selector, other.raw)]
                big = float(sum(classes[d].count for d in counted))
                row = {x(d, h): 1.0 for d in counted}
                row[u(c, h)] = row.get(u(c, h), 0.0) + big
                rows.append((row, -math.inf, skew + big))
    for c, cls in enumerate(classes):
        rows.append(({x(c, h): 1.0 for h in range(hosts)}, cls.count, cls.count))
    total = sum(cls.count for cls in classes)
    for i, c in enumerate(zonal):
        selector = classes[c].raw["spec"].get("nodeSelector") or {}
        for s in range(slots):
            split = {x(c, s): 1.0}
            for z, zone in enumerate(zones):
                ub[w(i, s, z)] = classes[c].count if selector.get(ZONE, zone) == zone else 0
                split[w(i, s, z)] = -1.0
                row = {w(i, s, z): 1.0}
                row.update(
                    {y(s, k): -float(total) for k, o in enumerate(offers) if o.labels[ZONE] == zone}
                )
                rows.append((row, -math.inf, 0))
            rows.append((split, 0, 0))
    for t, (c, (selector, skew), least) in enumerate(spread_terms):
        counted = [d for d in zonal if _selects(selector, classes[d].raw)]
        if len(counted) != sum(_selects(selector, cls.raw) for cls in classes):
            raise ValueError("a zonal spread over pods without one is not modelled")
        own = classes[c].raw["spec"].get("nodeSelector") or {}
        eligible = [z for z, zone in enumerate(zones) if own.get(ZONE, zone) == zone]
        low = base + t * per_term + 2 * len(zones)
        big = float(total + skew)
        # fewer eligible zones than minDomains: the global minimum counts as 0
        ub[low] = 0 if least is not None and len(eligible) < least else big
        for z in eligible:
            p, used = base + t * per_term + z, base + t * per_term + len(zones) + z
            ub[p], ub[used] = total, 1
            row = {p: 1.0}
            for d in counted:
                i = zonal.index(d)
                for s in range(slots):
                    row[w(i, s, z)] = -1.0
                for h in range(slots, hosts):
                    if old[h - slots].labels.get(ZONE) == zones[z]:
                        row[x(d, h)] = -1.0
            rows.append((row, 0, 0))
            rows.append(({low: 1.0, p: -1.0}, -math.inf, 0))
            rows.append(({p: 1.0, low: -1.0, used: big}, -math.inf, skew + big))
            # a zone gets this class's pods only if used (then within the skew)
            row = {used: -float(total)}
            i = zonal.index(c)
            for s in range(slots):
                row[w(i, s, z)] = 1.0
            for h in range(slots, hosts):
                if old[h - slots].labels.get(ZONE) == zones[z]:
                    row[x(c, h)] = 1.0
            rows.append((row, -math.inf, 0))
        for h in range(slots, hosts):
            if old[h - slots].labels.get(ZONE) not in [zones[z] for z in eligible]:
                ub[x(c, h)] = 0
    if upper is not None and ny:
        rows.append(({j: cost[j] for j in range(ny)}, 0, upper + 1e-6))
    r = [i for i, (row, _, _) in enumerate(rows) for _ in row]
    cols = [j for row, _, _ in rows for j in row]
    vals = [v for row, _, _ in rows for v in row.values()]
    a = coo_matrix((vals, (r, cols)), shape=(len(rows), n)).tocsr()
    res = milp(
        cost,
        integrality=np.ones(n),
        bounds=Bounds(np.zeros(n), ub),
        constraints=LinearConstraint(a, [lo for _, lo, _ in rows], [hi for _, _, hi in rows]),
        options={"time_limit": seconds, "mip_rel_gap": 1e-7},
    )
    if res.status != 0:
        return None
    return float(res.fun)
