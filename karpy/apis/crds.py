"""`karpy crds`: render our CustomResourceDefinitions from the API models.

Without arguments it prints every CRD as one YAML stream (`-o json`: one JSON `List`);
`--output-dir DIR` writes one file per CRD under Karpenter's file names. Output is
deterministic (sorted keys), so the checked-in copies in `manifests/crds` can be compared with
a fresh rendering.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from karpy.apis.registry import RESOURCES
from karpy.apis.resource import CustomResource
from karpy.exitcodes import INVALID, OK

__all__ = ["add_arguments", "render", "render_all", "run", "write_all"]


def render(resource: CustomResource[Any]) -> str:
    """One CRD as a YAML document (starting with `---`)."""
    body = yaml.safe_dump(resource.crd(), sort_keys=True, default_flow_style=False, width=1_000_000)
    return f"---\n{body}"


def render_all() -> str:
    """Every CRD, one YAML stream."""
    return "".join(render(r) for r in RESOURCES)


def write_all(directory: Path) -> list[Path]:
    """Write each CRD to `directory/<group>_<plural>.yaml`; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for resource in RESOURCES:
        path = directory / resource.file_name
        path.write_text(render(resource), encoding="utf-8")
        written.append(path)
    return written


FORMATS = ("yaml", "json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        metavar="FORMAT",
        default="yaml",
        help="output format: yaml (default) or json; ignored with --output-dir",
    )
    parser.add_argument(
        "--output-dir",
        metavar="DIR",
        type=Path,
        help="write one YAML file per CRD into DIR (Karpenter's file names) instead of printing",
    )


def run(args: argparse.Namespace) -> int:
    directory: Path | None = args.output_dir
    if args.output not in FORMATS:
        if directory is not None:
            print(
                f"error: -o/--output: {args.output!r} is not one of {', '.join(FORMATS)}",
                file=sys.stderr,
            )
            return INVALID
        # `--output DIR` named the directory before `--output-dir` existed: still honoured
        print(
            "warning: --output DIR is deprecated, use --output-dir DIR "
            "(-o/--output is the output format)",
            file=sys.stderr,
        )
        directory = Path(args.output)
    if directory is not None:
        for path in write_all(directory):
            print(path)
        return OK
    if args.output == "json":
        crds = [r.crd() for r in RESOURCES]
        json.dump({"apiVersion": "v1", "kind": "List", "items": crds}, sys.stdout, indent=2)
        print()
        return OK
    sys.stdout.write(render_all())
    return OK
