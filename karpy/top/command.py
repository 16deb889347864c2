"""`karpy top`: a live view of the fleet (Textual), or with `--once` (or when standard output
is not a terminal, or with `-o json|yaml`) one view printed for scripts. Read-only, against
`--kubeconfig`/`--context`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import yaml

from karpy.exitcodes import FAILURE, INVALID, OK

if TYPE_CHECKING:
    from karpy.top.model import Filter

__all__ = ["add_arguments", "options_of", "run"]

SORT_CHOICES = ("name", "nodepool", "cost", "utilisation", "cpu", "memory", "age")


def _percent(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a percentage, such as 50") from None
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r}: between 0 (excluded) and 100")
    return value / 100


def _dollars(text: str) -> float:
    try:
        value = float(text.lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: an hourly price, such as 0.5") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: not negative")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--once",
        action="store_true",
        help="print one view and exit (implied when stdout is not a terminal or with -o json|yaml)",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("table", "json", "yaml"),
        default="table",
        help="format of --once",
    )
    parser.add_argument(
        "--nodepool",
        action="append",
        default=[],
        metavar="NAME",
        help="only nodes of this NodePool (repeatable)",
    )
    parser.add_argument(
        "-l",
        "--selector",
        default="",
        help="only nodes whose labels match this selector (kubectl's syntax)",
    )
    parser.add_argument(
        "--utilisation-below",
        type=_percent,
        metavar="PERCENT",
        help="only nodes whose requests use less than PERCENT of their CPU and of their memory",
    )
    parser.add_argument(
        "--cost-above",
        type=_dollars,
        metavar="DOLLARS",
        help="only nodes costing at least DOLLARS per hour",
    )
    parser.add_argument(
        "--sort",
        choices=SORT_CHOICES,
        default="name",
        help="row order: name, nodepool (A-Z), cost (dearest first), utilisation, cpu, memory "
        "(least used first; utilisation is the larger of cpu and memory), age (oldest first)",
    )
    parser.add_argument("--reverse", action="store_true", help="reverse the row order")
    parser.add_argument("--kubeconfig", help="the kubeconfig (default: $KUBECONFIG, ...)")
    parser.add_argument("--context", help="the kubeconfig context")


def options_of(args: argparse.Namespace) -> Filter:
    """The filter the flags ask for (raises `SelectorError`)."""
    from karpy.top.model import Filter, parse_selector

    selector = parse_selector(args.selector) if args.selector.strip() else None
    return Filter(
        nodepools=frozenset(args.nodepool),
        selector=selector,
        utilisation_below=args.utilisation_below,
        cost_above=args.cost_above,
    )


def _once(args: argparse.Namespace, chosen: Filter) -> int:
    from karpy.kube import KubeError
    from karpy.simulation.live import list_cluster
    from karpy.top.estimate import lower_bound, price_book
    from karpy.top.model import Fleet
    from karpy.top.table import render_table

    try:
        listed = asyncio.run(list_cluster(kubeconfig=args.kubeconfig, context=args.context))
    except (KubeError, OSError) as err:
        print(f"error: cannot read the cluster: {err}", file=sys.stderr)
        return FAILURE
    fleet = Fleet()
    for kind, items in listed.items():
        fleet.replace(kind, items)
    bound, why = lower_bound(listed)
    if why:
        print(f"warning: no plan lower bound: {why}", file=sys.stderr)
    view = fleet.view(
        prices=price_book(fleet.instance_types(), fleet.zones()),
        now=datetime.now(UTC),
        filter=chosen,
        sort=args.sort,
        reverse=args.reverse,
        lower_bound=bound,
    )
    if args.output == "json":
        json.dump(view.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.output == "yaml":
        yaml.safe_dump(view.to_dict(), sys.stdout, sort_keys=False)
    else:
        sys.stdout.write(render_table(view))
    return OK


def run(args: argparse.Namespace) -> int:
    from karpy.scheduling.selectors import SelectorError

    try:
        chosen = options_of(args)
    except SelectorError as err:
        print(f"error: --selector: {err}", file=sys.stderr)
        return INVALID
    if args.once or args.output != "table" or not sys.stdout.isatty():
        return _once(args, chosen)
    # loaded only for the live view: Textual takes a while to import
    from karpy.kube.logconfig import configure_logging
    from karpy.top.app import LogLines, TopApp
    from karpy.top.feed import WatchFeed

    # the informers' log lines would scribble over the screen: the app shows the newest
    logs = LogLines()
    configure_logging("warning", json=False, stream=logs)
    app = TopApp(
        log_stream=logs,
        feed=WatchFeed(kubeconfig=args.kubeconfig, context=args.context),
        filter=chosen,
        sort=args.sort,
        reverse=args.reverse,
    )
    app.run()
    return app.return_code or OK
