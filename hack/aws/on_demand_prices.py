"""Regenerate karpy's shipped on-demand price table from a recorded price file.

    .venv/bin/python hack/aws/on_demand_prices.py [SOURCE] [-o OUT]

SOURCE (default /work/shared/data/aws-on-demand-prices.json) is `{"generatedAt", "source",
"currency", "regions": {region: {instance type: USD per hour}}}`; the output keeps those fields
and writes one compact line per region, types sorted, so diffs stay readable.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

DEFAULT_SOURCE = Path("/work/shared/data/aws-on-demand-prices.json")
DEFAULT_OUT = (
    Path(__file__).resolve().parents[2] / "karpy/cloudprovider/aws/data/on-demand-prices.json"
)


def render(source: dict[str, object]) -> str:
    regions = source.get("regions")
    if not isinstance(regions, dict) or not regions:
        raise ValueError("regions: expected a map of region to {instance type: price}")
    lines = ["{"]
    for key in ("generatedAt", "source", "currency", "unit"):
        if key in source:
            lines.append(f"{json.dumps(key)}: {json.dumps(source[key])},")
    lines.append('"regions": {')
    names = sorted(regions)
    for i, region in enumerate(names):
        prices = regions[region]
        if not isinstance(prices, dict):
            raise ValueError(f"regions.{region}: expected a map of instance type to price")
        for name, price in prices.items():
            if not isinstance(price, int | float) or isinstance(price, bool) or price < 0:
                raise ValueError(f"regions.{region}.{name}: not a non-negative number")
        body = json.dumps(dict(sorted(prices.items())), separators=(",", ":"))
        comma = "," if i < len(names) - 1 else ""
        lines.append(f"{json.dumps(region)}: {body}{comma}")
    lines.append("}}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    text = render(json.loads(args.source.read_text()))
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(text)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
