"""Rendering a plan: JSON/YAML with a fixed schema (documented in the README), or a table.

JSON is indented down to the fields of list items, whose values are written compact on one
line: readable, and fast, since Python's indenting JSON encoder is pure Python and a
20,000-pod plan is tens of megabytes. Those megabytes go out in chunks of a megabyte
(`write_chunked`): written line by line through a text stream's small buffer, they cost a
system call and a wake-up of the reader (a pipe, `jq`) every 8 KB, several times the time it
takes to encode them.
"""

from __future__ import annotations

import codecs
import io
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from karpy.scheduling import Requirements, format_resources
from karpy.scheduling.engine import SchedulingInput, SchedulingResult

__all__ = ["plan_document", "render", "widen_pipe", "write_chunked", "write_plan"]

_ITEM = json.JSONEncoder(separators=(", ", ": "))


def _round(x: float) -> float:
    return round(x, 6)


def plan_document(inp: SchedulingInput, result: SchedulingResult) -> dict[str, Any]:
    """The plan as the documented JSON object (keep these names: scripts rely on them)."""
    counters: Counter[str] = Counter()
    claims = []
    # Claims repeat a few instance-type lists, requirement sets and request totals (a 4,000-claim
    # plan has about 16 distinct requirement sets): each distinct one becomes one object, shared
    # by the claims that have it, and is encoded once (`_fields` keys its memo on the object).
    names: dict[int, list[str]] = {}
    requirements: dict[Requirements, list[dict[str, Any]]] = {}
    resources: dict[tuple[tuple[str, int], ...], dict[str, Any]] = {}
    for claim in result.node_claims:
        type_names = names.get(id(claim.instance_types))
        if type_names is None:
            type_names = names[id(claim.instance_types)] = [t.name for t in claim.instance_types]
        reqs = requirements.get(claim.requirements)
        if reqs is None:
            reqs = requirements[claim.requirements] = [
                {"key": r["key"], "operator": r["operator"], "values": r.get("values", [])}
                for r in claim.requirements.to_list()
            ]
        totals = tuple(claim.requests.items())
        requests = resources.get(totals)
        if requests is None:
            requests = resources[totals] = {"requests": format_resources(claim.requests)}
        counters[claim.nodepool] += 1
        offering = claim.offering
        claims.append(
            {
                "name": f"{claim.nodepool}-{counters[claim.nodepool]}",
                "nodePool": claim.nodepool,
                "instanceTypes": type_names,
                "requirements": reqs,
                "resources": requests,
                "offering": {
                    "instanceType": claim.instance_types[0].name,
                    "zone": offering.zone if offering else "",
                    "capacityType": offering.capacity_type if offering else "",
                    "price": _round(offering.price if offering else 0.0),
                },
                "pods": [p.key for p in claim.pods],
            }
        )
    ratio = result.ratio
    return {
        "nodeClaims": claims,
        "existingNodes": [
            {"name": name, "pods": [p.key for p in pods]}
            for name, pods in sorted(result.existing.items())
        ],
        "unschedulable": [
            {"pod": key, "reason": reason} for key, reason in sorted(result.errors.items())
        ],
        "cost": {
            "total": _round(result.cost),
            "lowerBound": _round(result.lower_bound),
            "ratio": _round(ratio) if ratio != float("inf") else None,
            # the exact planner's verdict on small batches: proven cheapest, and the gap to
            # the best bound it proved (None when it did not run; `exact` says why)
            "optimal": result.optimal,
            "gap": None if result.gap is None else _round(result.gap),
            "exact": result.exact,
        },
        "stats": {
            "pods": len(inp.pods),
            "nodeClaims": len(result.node_claims),
            "seconds": round(result.seconds, 3),
        },
    }


def _table(doc: dict[str, Any]) -> str:
    rows: Counter[tuple[str, str, str, str, float]] = Counter()
    pods: Counter[tuple[str, str, str, str, float]] = Counter()
    for c in doc["nodeClaims"]:
        o = c["offering"]
        key = (c["nodePool"], o["instanceType"], o["capacityType"], o["zone"], o["price"])
        rows[key] += 1
        pods[key] += len(c["pods"])
    headers = ("NODEPOOL", "INSTANCE TYPE", "CAPACITY", "ZONE", "NODES", "PODS", "$/HOUR")
    lines = [
        (pool, it, ct, zone, str(n), str(pods[(pool, it, ct, zone, price)]), f"{price * n:.4f}")
        for (pool, it, ct, zone, price), n in sorted(rows.items())
    ]
    out: list[str] = []
    if lines:
        widths = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(headers)]
        out.append("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
        out.extend(
            "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in lines
        )
    else:
        out.append("No new nodes.")
    cost = doc["cost"]
    stats = doc["stats"]
    ratio = "n/a" if cost["ratio"] is None else f"{cost['ratio']:.3f}"
    out.append("")
    out.append(
        f"{stats['nodeClaims']} new nodes for {stats['pods']} pending pods: "
        f"${cost['total']:.4f}/hour, lower bound ${cost['lowerBound']:.4f}/hour "
        f"(ratio {ratio}), {stats['seconds']:.3f}s"
    )
    if cost["optimal"]:
        out.append("Plan proven optimal.")
    elif cost["gap"] is not None:
        out.append(f"Plan not proven optimal: gap {cost['gap']:.2%} to the best bound.")
    elif cost["exact"]:
        out.append(f"Plan not proven optimal ({cost['exact']}).")
    if doc["existingNodes"]:
        out.append("")
        out.append("Pods placed on existing nodes:")
        out.extend(f"  {n['name']}: {len(n['pods'])} pods" for n in doc["existingNodes"])
    if doc["unschedulable"]:
        out.append("")
        out.append(f"Unschedulable pods ({len(doc['unschedulable'])}):")
        out.extend(f"  {u['pod']}: {u['reason']}" for u in doc["unschedulable"])
    return "\n".join(out) + "\n"


def _fields(obj: dict[str, Any], indent: str, memo: dict[int, str]) -> Iterator[str]:
    """One line per field; a list or object shared by several items is encoded once (`memo`,
    by id, valid while the document is alive)."""
    last = len(obj) - 1
    for n, (key, value) in enumerate(obj.items()):
        if type(value) is list or type(value) is dict:
            text = memo.get(id(value))
            if text is None:
                text = memo[id(value)] = _ITEM.encode(value)
        else:
            text = _ITEM.encode(value)
        yield f"{indent}{json.dumps(key)}: {text}{',' if n < last else ''}\n"


def _json_lines(doc: dict[str, Any]) -> Iterator[str]:
    """The plan as JSON: the outline and list items indented, field values compact."""
    memo: dict[int, str] = {}
    yield "{\n"
    last_key = len(doc) - 1
    for n, (key, value) in enumerate(doc.items()):
        comma = "," if n < last_key else ""
        if isinstance(value, list) and value:
            yield f"  {json.dumps(key)}: [\n"
            last = len(value) - 1
            for i, item in enumerate(value):
                yield "    {\n"
                yield from _fields(item, "      ", memo)
                yield "    }" + ("," if i < last else "") + "\n"
            yield f"  ]{comma}\n"
        elif isinstance(value, dict):
            yield f"  {json.dumps(key)}: {{\n"
            yield from _fields(value, "    ", memo)
            yield f"  }}{comma}\n"
        else:
            yield f"  {json.dumps(key)}: {_ITEM.encode(value)}{comma}\n"
    yield "}\n"


def write_yaml(out: TextIO, doc: Any) -> None:
    """`doc` as YAML, each object written each time it occurs: the plan shares lists between
    claims, which YAML would otherwise print once with an anchor (`&id001`) and then as
    aliases. PyYAML is imported here, so that JSON and table output never load it."""
    import yaml

    class PlainDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
        def ignore_aliases(self, data: Any) -> bool:
            return True

    yaml.dump(doc, out, Dumper=PlainDumper, sort_keys=False)


CHUNK = 1 << 20


def write_chunked(out: TextIO, lines: Iterable[str]) -> None:
    """`out.writelines(lines)`, a megabyte at a time: straight to the byte stream under `out`
    when it has one (`sys.stdout`), encoded as `out` would encode them."""
    binary = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if binary is None or encoding is None or os.linesep != "\n":
        out.writelines(lines)
        return
    encoder = codecs.getincrementalencoder(encoding)(getattr(out, "errors", None) or "strict")
    out.flush()  # what was written through `out` goes first
    chunk: list[str] = []
    size = 0
    for line in lines:
        chunk.append(line)
        size += len(line)
        if size >= CHUNK:
            binary.write(encoder.encode("".join(chunk)))
            chunk.clear()
            size = 0
    binary.write(encoder.encode("".join(chunk), final=True))
    binary.flush()


def widen_pipe(out: TextIO) -> None:
    """Give the pipe `out` writes to (if it is one) a megabyte of buffer, the most Linux lets
    any process ask for: its reader then wakes once a megabyte instead of every 64 KB."""
    try:
        import fcntl

        fd = out.fileno()
        if fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) < CHUNK:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, CHUNK)
    except (ImportError, AttributeError, OSError, ValueError):
        pass  # not a pipe, not Linux, or a limit below a megabyte: the default buffer will do


def write_plan(out: TextIO, inp: SchedulingInput, result: SchedulingResult, fmt: str) -> None:
    """Write the plan to `out` in `fmt` (json, yaml or table), piece by piece."""
    doc = plan_document(inp, result)
    if fmt == "json":
        write_chunked(out, _json_lines(doc))
    elif fmt == "yaml":
        write_yaml(out, doc)
    else:
        out.write(_table(doc))


def render(inp: SchedulingInput, result: SchedulingResult, fmt: str) -> str:
    buffer = io.StringIO()
    write_plan(buffer, inp, result, fmt)
    return buffer.getvalue()
