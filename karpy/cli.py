"""The `karpy` command: `run`, `simulate`, `explain`, `top`, `catalog`, `crds` and `version`.

Each subcommand lives in its own module exposing `add_arguments(parser)` and `run(args) -> int`;
modules are imported only when their subcommand is chosen, so `karpy version` stays instant.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Protocol, cast

from karpy import __version__
from karpy.exitcodes import FAILURE, OK, TABLE

# subcommand -> (module implementing it, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("karpy.operator", "run the controller (settings from flags or environment)"),
    "simulate": ("karpy.simulation.command", "show the nodes karpy would launch for a scenario"),
    "explain": (
        "karpy.explain.command",
        "explain why a pod waits, why a node stays or goes, what a NodePool may disrupt",
    ),
    "top": (
        "karpy.top.command",
        "the fleet at a glance: each node's type, price, requests and state, what it all costs",
    ),
    "catalog": (
        "karpy.simulation.catalogcommand",
        "export the instance-type catalogue a configuration sees (--instance-types format)",
    ),
    "crds": ("karpy.apis.crds", "print or write the CustomResourceDefinitions"),
    "version": ("karpy.versioncommand", "print the version, commit, Python version and platform"),
}


# One-shot commands whose start-up is part of what users wait for: they import numpy, HiGHS and
# the API models and then build millions of objects, none of them cyclic garbage. The cyclic
# collector stays off from the start (it would rescan every imported module's objects again and
# again: about a sixth of the import time); their `run` turns it on when it wants it.
WITHOUT_GC_AT_START = frozenset({"simulate"})


class Subcommand(Protocol):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _load(name: str) -> Subcommand:
    return cast(Subcommand, importlib.import_module(SUBCOMMANDS[name][0]))


def _chosen(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The `karpy` parser, with the flags of subcommand `chosen` (or of every subcommand when
    `chosen` is "*": the generated CLI reference reads them all)."""
    top = argparse.ArgumentParser(
        prog="karpy",
        description=__doc__.splitlines()[0],
        epilog=TABLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"karpy {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_module, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=TABLE,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if chosen in (name, "*"):
            _load(name).add_arguments(sub_parser)
    return top


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """Parse a `karpy` command line (without the program name); exits 2 on a bad one, as
    argparse does. The container image's ENTRYPOINT and the chart's args are checked with it."""
    argv = list(argv)
    return parser(_chosen(argv)).parse_args(argv)


def main(argv: Sequence[str] | None = None, *, process_ends: bool = False) -> int:
    """Parse `argv` and run the subcommand; return the exit status. A bare `karpy` prints the
    help. `process_ends`: the process ends right after (`entry`), so nothing needs to be freed
    (`args.process_ends`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        parser().print_help()
        return OK
    chosen = _chosen(argv)
    collecting = gc.isenabled()
    if chosen in WITHOUT_GC_AT_START:
        gc.disable()
    try:
        args = parse(argv)
        args.process_ends = process_ends
        return _load(args.command).run(args)
    finally:
        if collecting:
            gc.enable()


def _quiet_broken_pipe() -> int:
    """The reader went away (`karpy simulate ... | head -1`). As the Python documentation
    recommends for SIGPIPE: point stdout at /dev/null, so that the interpreter's final flush
    does not fail again and print a traceback, and exit with status 1, without a message."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return FAILURE


def entry() -> None:
    """The `karpy` program: `main()`, then exit. Subcommands that declare
    `EXIT_WITHOUT_CLEANUP` end the process once their output is flushed, skipping the
    interpreter's teardown of everything they built."""
    try:
        code = main(process_ends=True)
        sys.stdout.flush()
        chosen = _chosen(sys.argv[1:])
        if chosen in SUBCOMMANDS and getattr(_load(chosen), "EXIT_WITHOUT_CLEANUP", False):
            sys.stderr.flush()
            os._exit(code)
    except BrokenPipeError:
        code = _quiet_broken_pipe()
    except KeyboardInterrupt:
        print("karpy: interrupted", file=sys.stderr)
        code = 130
    raise SystemExit(code)


if __name__ == "__main__":
    entry()
