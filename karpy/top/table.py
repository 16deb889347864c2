"""`karpy top --once -o table`: one view as aligned text, nodes then NodePool and cluster
totals."""

from __future__ import annotations

from collections.abc import Sequence

from karpy.top.model import HOURS_PER_MONTH, FleetView, NodeRow, PoolTotal, age_text, quantity

__all__ = ["NODE_HEADERS", "node_cells", "render_table"]

NODE_HEADERS = (
    "NODE",
    "NODEPOOL",
    "INSTANCE TYPE",
    "CAPACITY",
    "ZONE",
    "$/H",
    "CPU",
    "MEMORY",
    "PODS",
    "AGE",
    "STATE",
)


def _price(value: float | None, exact: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" + ("" if exact else "~")


def _use(requested: int, allocatable: int, *, memory: bool) -> str:
    share = f" {requested / allocatable:.0%}" if allocatable else ""
    used = quantity(requested, memory=memory)
    return f"{used}/{quantity(allocatable, memory=memory)}{share}"


def node_cells(row: NodeRow, view: FleetView) -> tuple[str, ...]:
    """A row's cells as text (the CPU and memory cells without bars)."""
    return (
        row.name,
        row.nodepool or "-",
        row.instance_type or "-",
        row.capacity_type or "-",
        row.zone or "-",
        _price(row.price, row.price_exact),
        _use(row.cpu_requested, row.cpu_allocatable, memory=False),
        _use(row.memory_requested, row.memory_allocatable, memory=True),
        str(row.pods),
        age_text(row.age(view.now)),
        ",".join(row.states),
    )


def pool_cells(pool: PoolTotal) -> tuple[str, ...]:
    return (
        pool.nodepool or "(none)",
        str(pool.nodes),
        f"{pool.per_hour:.4f}",
        f"{pool.per_month:.2f}",
        pool.source,
        _use(pool.cpu_requested, pool.cpu_allocatable, memory=False),
        _use(pool.memory_requested, pool.memory_allocatable, memory=True),
    )


POOL_HEADERS = ("NODEPOOL", "NODES", "$/H", "$/MONTH", "PRICED BY", "CPU", "MEMORY")


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    cells = [list(header), *(list(r) for r in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]


def cluster_line(view: FleetView) -> str:
    c = view.cluster
    text = f"cluster: {c.nodes} nodes, ${c.per_hour:.4f}/h, ${c.per_month:.2f}/month"
    if c.unpriced:
        text += f" ({c.unpriced} unpriced)"
    if c.lower_bound is not None:
        text += (
            f"; plan lower bound for the running pods ${c.lower_bound:.4f}/h"
            f" (${c.lower_bound * HOURS_PER_MONTH:.2f}/month)"
        )
    return text


def render_table(view: FleetView) -> str:
    lines: list[str] = []
    if view.rows:
        lines += _aligned(NODE_HEADERS, [node_cells(r, view) for r in view.rows])
    else:
        lines.append(f"No nodes ({view.filter.describe()}).")
    if view.pools:
        lines.append("")
        lines += _aligned(POOL_HEADERS, [pool_cells(p) for p in view.pools])
    lines.append("")
    lines.append(cluster_line(view))
    return "\n".join(lines) + "\n"
