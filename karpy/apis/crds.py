"""`karpy crds`: render our CustomResourceDefinitions from the API models.

Without arguments it prints every CRD as one YAML stream; `--output DIR` writes one file per CRD
under Karpenter's file names. Output is deterministic (sorted keys), so the checked-in copies in
`manifests/crds` can be compared with a fresh rendering.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from karpy.apis.registry import RESOURCES
from karpy.apis.resource import CustomResource

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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output",
        "-o",
        metavar="DIR",
        type=Path,
        help="write one file per CRD into DIR (Karpenter's file names) instead of printing",
    )


def run(args: argparse.Namespace) -> int:
    if args.output is None:
        sys.stdout.write(render_all())
        return 0
    for path in write_all(args.output):
        print(path)
    return 0
