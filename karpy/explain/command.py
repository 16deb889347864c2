"""`karpy explain pod NAME -n NS | node NAME | nodepool NAME`: why, from the controller's own
functions, read-only (`--kubeconfig`, `--context`; `-o table|json|yaml`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import yaml

from karpy.exitcodes import FAILURE, INVALID, OK

__all__ = ["add_arguments", "run"]

JSON = dict[str, Any]
KINDS = ("pod", "node", "nodepool")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=KINDS, help="what to explain")
    parser.add_argument("name", help="its name (node: a Node or NodeClaim name)")
    parser.add_argument("-n", "--namespace", default="default", help="the pod's namespace")
    parser.add_argument(
        "-o", "--output", choices=("table", "json", "yaml"), default="table", help="format"
    )
    parser.add_argument("--kubeconfig", help="the kubeconfig (default: $KUBECONFIG, ...)")
    parser.add_argument("--context", help="the kubeconfig context")


def _rows(out: TextIO, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [list(header)] + [["-" if v is None or v == "" else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for r in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")


def _fields(out: TextIO, answer: JSON, keys: Sequence[str]) -> None:
    for k in keys:
        if answer.get(k) not in (None, "", {}, []):
            out.write(f"{k}: {answer[k]}\n")


def _table(out: TextIO, kind: str, answer: JSON) -> None:
    if kind == "node":
        _fields(
            out,
            answer,
            (
                "node",
                "nodeClaim",
                "nodePool",
                "instanceType",
                "zone",
                "capacityType",
                "pricePerHour",
                "expiresAt",
                "drift",
                "disruption",
                "consolidation",
            ),
        )
        command = answer.get("command")
        if command:
            out.write(
                f"command: {command['method']} ({command['decision']}), reason "
                f"{command['reason']}, started {command['started']}"
                + (
                    f", saves {command['savingsPerHour']}/h"
                    if command.get("savingsPerHour") is not None
                    else ""
                )
                + "\n"
            )
            for r in command["replacements"]:
                what = r.get("instanceType") or ",".join(r.get("instanceTypes") or ()) or "-"
                price = r.get("pricePerHour")
                out.write(
                    f"  replacement {r['nodeClaim']}: {what}"
                    + (f" {r.get('zone')} {r.get('capacityType')}" if r.get("instanceType") else "")
                    + (f" {price}/h" if price is not None else "")
                    + (" initialized" if r.get("initialized") else " not initialized")
                    + "\n"
                )
        rows = []
        for m in answer["methods"]:
            b = m.get("blocker") or {}
            state = (
                "candidate"
                if m["candidate"]
                else ("n/a" if m.get("applies") is False else "blocked")
            )
            rows.append(
                (
                    m["method"],
                    state,
                    b.get("reason"),
                    b.get("object"),
                    b.get("detail") or m.get("note"),
                )
            )
        _rows(out, ("METHOD", "STATE", "REASON", "OBJECT", "DETAIL"), rows)
    elif kind == "pod":
        _fields(
            out,
            answer,
            (
                "pod",
                "state",
                "node",
                "nodeClaim",
                "nodePool",
                "offering",
                "nominatedNode",
                "note",
                "inputError",
                "scheduler",
            ),
        )
        plan = answer.get("plan")
        if plan and "alternatives" in plan:
            proven = "proven optimal" if plan["provenOptimal"] else "not proven optimal"
            gap = f", gap {plan['gap']}" if plan.get("gap") is not None else ""
            out.write(
                f"plan: batch {plan.get('batch')} of {plan.get('pods')} pod(s) and "
                f"{plan.get('nodeClaims')} NodeClaim(s), cost {plan.get('cost')}/h, lower bound "
                f"{plan.get('lowerBound')}/h, {proven}{gap}\n"
            )
            _rows(
                out,
                ("ALTERNATIVE", "ZONE", "CAPACITY", "PRICE/H"),
                [
                    (a["instanceType"], a["zone"], a["capacityType"], a["pricePerHour"])
                    for a in plan["alternatives"]
                ],
            )
        elif plan:
            out.write(f"plan: {plan}\n")
        pools = answer.get("nodePools") or []
        if pools:
            _rows(
                out,
                ("NODEPOOL", "FITS", "REASON", "OBJECT", "DETAIL", "FIX"),
                [
                    (
                        p["nodePool"],
                        "yes" if p["fits"] else "no",
                        p.get("reason"),
                        p.get("object"),
                        p.get("detail"),
                        p.get("fix"),
                    )
                    for p in pools
                ],
            )
    else:
        _fields(
            out,
            answer,
            ("nodePool", "nodes", "costPerHour", "unpricedNodes", "limits", "usage", "drifted"),
        )
        _rows(
            out,
            ("BUDGET REASON", "ALLOWED", "DISRUPTING", "REMAINING", "NEXT CHANGE", "THEN ALLOWED"),
            [
                (
                    r,
                    b["allowed"],
                    b["disrupting"],
                    b["remaining"],
                    b.get("nextChangeAt"),
                    b.get("allowedAfterChange"),
                )
                for r, b in answer["budgets"].items()
            ],
        )
        if answer.get("windows"):
            _rows(
                out,
                ("WINDOW SCHEDULE", "DURATION", "NODES", "REASONS", "OPEN", "OPENS", "CLOSES"),
                [
                    (
                        w["schedule"],
                        w["duration"],
                        w["nodes"],
                        ",".join(w["reasons"]),
                        w.get("error") or ("yes" if w.get("open") else "no"),
                        w.get("opensAt"),
                        w.get("closesAt") or ("stays open" if "opensAt" in w else None),
                    )
                    for w in answer["windows"]
                ],
            )
        blocked = [
            (r, m, n)
            for r, per in sorted(answer["blocked"].items())
            for m, n in sorted(per.items())
        ]
        if blocked:
            _rows(out, ("BLOCKED REASON", "METHOD", "NODES"), blocked)


def _invalid(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return INVALID


def run(args: argparse.Namespace) -> int:
    # loaded here: `karpy --help` stays instant
    from karpy.explain.cluster import read_cluster
    from karpy.kube import KubeError

    try:
        view = read_cluster(kubeconfig=args.kubeconfig, context=args.context)
    except (KubeError, OSError) as err:
        print(f"error: cannot read the cluster: {err}", file=sys.stderr)
        return FAILURE
    for warning in view.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    answer: JSON
    if args.kind == "node":
        from karpy.explain.node import explain_node

        node = view.node(args.name)
        if node is None:
            return _invalid(f'node "{args.name}" not found (neither a Node nor a NodeClaim)')
        answer = explain_node(view, node)
    elif args.kind == "nodepool":
        from karpy.explain.nodepool import explain_nodepool

        pool = view.nodepools.get(args.name)
        if pool is None:
            return _invalid(f'nodepool "{args.name}" not found')
        answer = explain_nodepool(view, pool)
    else:
        from karpy.explain.pod import explain_pod
        from karpy.state import pods as podutil

        key = f"{args.namespace}/{args.name}"
        pod = next((p for p in view.listed["pods"] if podutil.pod_key(p) == key), None)
        if pod is None:
            return _invalid(f'pod "{key}" not found')
        answer = explain_pod(view, pod)
    if args.output == "json":
        json.dump(answer, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    elif args.output == "yaml":
        yaml.safe_dump(json.loads(json.dumps(answer, default=str)), sys.stdout, sort_keys=False)
    else:
        _table(sys.stdout, args.kind, answer)
    return OK
