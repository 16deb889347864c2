"""`karpy simulate`: show the nodes karpy would launch for a scenario or a live cluster.

    karpy simulate -f FILE|DIR|- [-R] [--instance-types catalog.json|aws[:REGION]|azure[:REGION]]
                   [-o json|yaml|table] [--fail-on-unschedulable]
    karpy simulate --from-cluster [--kubeconfig PATH] [--context NAME]
    karpy simulate --disruption -f cluster.yaml [--spot-to-spot] [--min-savings SHARE]
    karpy simulate --disruption --from-cluster [--kubeconfig PATH] [--context NAME]

`-f` reads files, directories (their .json, .yaml and .yml files; `-R` for subdirectories too)
and `-` (standard input), as kubectl does. `--from-cluster` reads the objects from a live
cluster instead, read only (`karpy.simulation.live`): the plan is then for the pods pending
there now. With `--disruption` the scenario is a cluster snapshot (nodes, pods bound to them,
NodePools, PDBs) and the output is what voluntary disruption would do to it
(`karpy.simulation.disruption`). The catalogue follows the NodeClasses
(`karpy.simulation.catalogchoice`).

Exit status (`karpy.exitcodes`): 0 with a plan (even when some pods cannot be scheduled: they
are listed with the reason; `--fail-on-unschedulable` makes that 3), 1 when the cluster cannot
be read, 2 when the input is invalid (one line on standard error names the file, document and
field, and nothing is printed on standard output). A scenario holds at most `--max-pods` pods
(20,000 unless raised).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import types
from collections.abc import Mapping
from typing import Any

from karpy.exitcodes import FAILURE, INVALID, OK, UNSCHEDULABLE
from karpy.progress import progress
from karpy.scheduling import CatalogError
from karpy.scheduling.engine import schedule, warm_up
from karpy.simulation.catalogchoice import choose_catalog
from karpy.simulation.documents import DEFAULT_MAX_PODS
from karpy.simulation.filenames import expand_filenames
from karpy.simulation.output import widen_pipe, write_plan
from karpy.simulation.scenario import ScenarioError, ScenarioObjects, load_scenario

__all__ = ["EXIT_WITHOUT_CLEANUP", "add_arguments", "run"]

# `karpy simulate` leaves nothing to clean up, and tearing down the objects of a large scenario
# one by one takes most of a second: the program ends the process as soon as output is flushed.
EXIT_WITHOUT_CLEANUP = True

# What a run built, kept when the process ends right after it (`args.process_ends`): freeing
# a large scenario's millions of objects one by one, as returning from the run would, costs
# more than a tenth of a second, for memory nobody would use again.
_KEPT: list[object] = []


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `karpy simulate` flags, kept next to the command that reads them; the README's
    simulate section documents each."""
    parser.add_argument(
        "-f",
        "--filename",
        dest="files",
        action="append",
        metavar="FILE",
        help="YAML or JSON manifests: a file, a directory (its .json, .yaml and .yml files) or "
        "'-' for standard input; repeatable; required unless --from-cluster",
    )
    parser.add_argument(
        "-R",
        "--recursive",
        action="store_true",
        help="with -f DIR: read the directory's subdirectories too",
    )
    parser.add_argument(
        "--from-cluster",
        action="store_true",
        help="read the scenario from the live cluster instead of files, read only, as `karpy "
        "run` sees it: plan its pending pods, or with --disruption what disruption would do",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="with --from-cluster: the kubeconfig (default: $KUBECONFIG, in-cluster, "
        "~/.kube/config)",
    )
    parser.add_argument(
        "--context",
        metavar="NAME",
        help="with --from-cluster: the kubeconfig context (default: its current-context)",
    )
    parser.add_argument(
        "--fail-on-unschedulable",
        action="store_true",
        help="exit 3 when some pods stay unschedulable (the plan is still printed)",
    )
    parser.add_argument(
        "--instance-types",
        metavar="CATALOG",
        help="instance-type catalogue file (kwok's instance_types.json format, or an AWS or Azure "
        "one from `karpy catalog export --provider aws|azure`), or 'aws' / 'aws:REGION' for the "
        "shipped "
        "snapshot of real EC2 types and on-demand prices, or 'azure' / 'azure:REGION' for the "
        "shipped Azure SKUs and retail prices. Default: follows the NodeClasses, the shipped "
        "EC2 snapshot for EC2NodeClass, the Azure one (eastus) for AKSNodeClass, else the "
        "built-in kwok catalogue",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("json", "yaml", "table"),
        default="table",
        help="output format (default: table)",
    )
    parser.add_argument(
        "--max-pods",
        type=_positive_int,
        default=DEFAULT_MAX_PODS,
        metavar="N",
        help=f"refuse scenarios with more than N pods (default: {DEFAULT_MAX_PODS}); a "
        "simulation's time and memory grow with its pods",
    )
    parser.add_argument(
        "--preference-policy",
        choices=("Respect", "Ignore"),
        default="Respect",
        help="treat preferred affinities and ScheduleAnyway spreads as Karpenter does (a "
        "'default' SchedulingConfig in the scenario that sets preferencePolicy wins)",
    )
    parser.add_argument(
        "--disruption",
        action="store_true",
        help="show what emptiness and consolidation would do to the scenario's nodes and pods",
    )
    parser.add_argument(
        "--spot-to-spot",
        action="store_true",
        help="with --disruption: the SpotToSpotConsolidation feature gate is on",
    )
    parser.add_argument(
        "--min-savings",
        type=_share,
        default=0.0,
        metavar="SHARE",
        help="with --disruption: share of the nodes' price a replacement must save, in [0, 1) "
        "(default 0: strictly cheaper, as Karpenter)",
    )
    parser.add_argument(
        "--max-rounds",
        type=_positive_int,
        default=1000,
        metavar="N",
        help="with --disruption: stop after N rounds of disruption decisions, each of which "
        "may issue several commands (default 1000)",
    )
    parser.add_argument(
        "--min-values-policy",
        choices=("Strict", "BestEffort"),
        default="Strict",
        help="what to do when minValues cannot be met (a 'default' SchedulingConfig in the "
        "scenario that sets minValuesPolicy wins)",
    )
    parser.add_argument(
        "--default-topology-spread-constraints",
        type=_spread_defaults,
        default=[],
        metavar="JSON",
        help="kube-scheduler's cluster-default spread constraints, as karpy's "
        "DEFAULT_TOPOLOGY_SPREAD_CONSTRAINTS (a 'default' SchedulingConfig in the scenario "
        "that sets topologySpreadConstraints wins)",
    )


def _spread_defaults(value: str) -> list[dict[str, Any]]:
    """The flag's JSON list, checked as the setting is; errors name the item and field."""
    from pydantic import TypeAdapter  # only with the flag: settings load pydantic-settings

    from karpy.settings import SpreadDefault, spread_list

    try:
        parsed = TypeAdapter(tuple[SpreadDefault, ...]).validate_python(spread_list(value))
    except ValueError as err:
        errors = getattr(err, "errors", None)
        if callable(errors):
            first = errors()[0]
            loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
            raise argparse.ArgumentTypeError(f"{loc}: {first['msg']}") from None
        raise argparse.ArgumentTypeError(str(err)) from None
    return [c.to_constraint() for c in parsed]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} must be in [0, 1)")
    return value


def _invalid(message: str) -> int:
    print("error: " + " ".join(message.split()), file=sys.stderr)
    return INVALID


def _without_pydantic_plugin_discovery() -> None:
    """Spare the one-shot command pydantic's search for plugins when none is installed.

    At its first validator pydantic looks for plugins (the `pydantic` entry-point group) through
    `importlib.metadata`: importing it and reading every installed package's metadata costs
    about 0.04 s of a command that takes well under a second for a small scenario. A plugin
    declares itself in its package's `entry_points.txt`; when no package on the path declares
    one (or `PYDANTIC_DISABLE_PLUGINS` turns them all off), pydantic's loader is replaced by one
    that finds none, which is what it would have found. With a plugin installed, nothing
    changes."""
    name = "pydantic.plugin._loader"
    if name in sys.modules:
        return
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in ("__all__", "1", "true"):
        for folder in sys.path:
            try:
                entries = os.listdir(folder or ".")
            except OSError:
                continue
            egg = folder.lower().endswith(".egg")
            for entry in entries:
                lowered = entry.lower()
                if not (
                    lowered.endswith((".dist-info", ".egg-info")) or (egg and lowered == "egg-info")
                ):
                    continue
                try:
                    path = os.path.join(folder or ".", entry, "entry_points.txt")
                    with open(path, encoding="utf-8", errors="replace") as f:
                        declared = f.read()
                except OSError:
                    continue
                if "[pydantic]" in declared:
                    return
    loader = types.ModuleType(name, "pydantic's plugin loader, with no plugin installed")
    loader.get_plugins = tuple  # type: ignore[attr-defined]
    sys.modules[name] = loader


def run(args: argparse.Namespace) -> int:
    _without_pydantic_plugin_discovery()
    # Reading builds millions of small objects, none of them cyclic garbage: without the
    # collector's repeated full scans it takes half the time, and once frozen they are not
    # rescanned while the scheduler allocates. Unfrozen at the end, for callers that go on.
    gc.disable()
    try:
        return _simulate(args)
    finally:
        gc.unfreeze()
        gc.enable()


def _simulate(args: argparse.Namespace) -> int:
    if args.fail_on_unschedulable and args.disruption:
        return _invalid(
            "--fail-on-unschedulable: only for a plan of pending pods, not with --disruption"
        )
    if args.from_cluster:
        if args.files:
            return _invalid(
                "--from-cluster: reads the cluster, not -f files; give one or the other"
            )
        return _from_cluster(args)
    if args.kubeconfig or args.context:
        return _invalid("--kubeconfig/--context: only with --from-cluster")
    if not args.files:
        return _invalid("-f/--filename: Required value (or --from-cluster)")
    try:
        files = expand_filenames(args.files, recursive=args.recursive)
        with progress("reading the scenario"):
            scenario = load_scenario(
                files,
                instance_types=lambda kinds: choose_catalog(args.instance_types, kinds),
                max_pods=args.max_pods,
                preference_policy=args.preference_policy,
                min_values_policy=args.min_values_policy,
                default_spread=args.default_topology_spread_constraints,
            )
    except (ScenarioError, CatalogError) as err:
        return _invalid(str(err))
    except (TypeError, AttributeError, KeyError, ValueError, RecursionError) as err:
        # a shape the checks missed: still the input's fault, still one line, never a traceback
        return _invalid(
            f"{', '.join(args.files)}: cannot use the scenario: {type(err).__name__}: {err}"
        )
    warm_up()  # the solver's imports, still without the collector, then frozen with the rest
    gc.freeze()
    gc.enable()
    for warning in scenario.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.disruption:
        return _disruption(args, scenario.objects)
    inp = scenario.input
    with progress(f"planning {len(inp.pods)} pods"):
        result = schedule(inp)
    result.errors = scenario.explain(result.errors)
    if args.output == "json":  # tens of megabytes for a large scenario
        widen_pipe(sys.stdout)
    write_plan(sys.stdout, inp, result, args.output)
    if getattr(args, "process_ends", False):
        _KEPT.extend((scenario, result))
    return _outcome(args, result.errors)


def _outcome(args: argparse.Namespace, unschedulable: Mapping[str, str]) -> int:
    if args.fail_on_unschedulable and unschedulable:
        print(
            f"error: {len(unschedulable)} pods stay unschedulable (--fail-on-unschedulable)",
            file=sys.stderr,
        )
        return UNSCHEDULABLE
    return OK


def _from_cluster(args: argparse.Namespace) -> int:
    import asyncio

    from karpy.kube import KubeError
    from karpy.simulation.live import (
        list_cluster,
        nodeclass_kinds,
        objects_from_cluster,
        pending_plan_input,
    )

    try:
        with progress("reading the cluster"):
            listed = asyncio.run(list_cluster(kubeconfig=args.kubeconfig, context=args.context))
    except (KubeError, OSError) as err:  # ConfigError is a KubeError
        print(f"error: cannot read the cluster: {err}", file=sys.stderr)
        return FAILURE
    warnings: list[str] = []
    try:
        types = choose_catalog(args.instance_types, nodeclass_kinds(listed))
    except CatalogError as err:
        return _invalid(str(err))
    objects = objects_from_cluster(listed, instance_types=types, warnings=warnings)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.disruption:
        return _disruption(args, objects)
    built = pending_plan_input(
        objects,
        preference_policy=args.preference_policy,
        min_values_policy=args.min_values_policy,
        default_spread=args.default_topology_spread_constraints,
    )
    warm_up()
    with progress(f"planning {len(built.input.pods)} pending pods"):
        result = schedule(built.input)
    result.errors = built.explain({**built.errors, **result.errors})
    write_plan(sys.stdout, built.input, result, args.output)
    return _outcome(args, result.errors)


def _disruption(args: argparse.Namespace, objects: ScenarioObjects | None) -> int:
    # the controllers' modules are only needed here: plain `karpy simulate` does not load them
    from karpy.simulation.disruption import Replay, plan_disruption
    from karpy.simulation.disruption_output import write_disruption

    if objects is None:  # pragma: no cover - load_scenario always sets it
        return _invalid("the scenario has no objects")
    replay = Replay(
        nodepools=objects.nodepools,
        templates=objects.templates,
        nodes=objects.nodes,
        nodeclaims=objects.nodeclaims,
        pods=objects.pods,
        pdbs=objects.pdbs,
        daemonsets=objects.daemonsets,
        namespaces=objects.namespaces,
        configs=objects.configs,
        nodeclasses=objects.nodeclasses,
        overlays=objects.overlays,
        buffers=objects.buffers,
        pod_templates=objects.pod_templates,
        limit_ranges=objects.limit_ranges,
        spot_to_spot=args.spot_to_spot,
        min_savings=args.min_savings,
        preference_policy=args.preference_policy,
        default_spread=args.default_topology_spread_constraints,
    )
    warm_up()
    with progress("disruption: round 1", total=None) as shown:

        def on_round(round_: int, commands: int) -> None:
            shown.update(f"disruption: round {round_}, {commands} commands so far")

        plan = plan_disruption(replay, max_rounds=args.max_rounds, on_round=on_round)
    write_disruption(sys.stdout, plan, args.output)
    return OK
