"""`karpy version [-o json|yaml]`: the release, commit, Python version and platform."""

from __future__ import annotations

import argparse
import json

from karpy.buildinfo import build_info
from karpy.exitcodes import OK

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "yaml"),
        default="text",
        help="output format (default: text)",
    )


def run(args: argparse.Namespace) -> int:
    info = build_info()
    if args.output == "json":
        print(json.dumps(info, indent=2))
    elif args.output == "yaml":
        import yaml

        print(yaml.safe_dump(info, sort_keys=False), end="")
    else:
        print(f"karpy {info['version']}")
        for key in ("commit", "python", "platform"):
            print(f"{key}: {info[key]}")
    return OK
