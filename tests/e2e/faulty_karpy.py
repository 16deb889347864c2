"""`python -m tests.e2e.faulty_karpy run`: `karpy run` with its provider wrapped in a fault plan.

The plan comes from `KARPY_TEST_PROVIDER_FAULTS` (grammar in `karpy.cloudprovider.faults`). Only
this test entry reads it: `karpy run` itself has no way to switch faults on.
"""

from __future__ import annotations

import os
import sys
from typing import Final

from karpy.cli import parse
from karpy.cloudprovider.faults import ENV_VAR, from_env
from karpy.cloudprovider.types import CloudProvider
from karpy.operator import run

__all__ = ["FAULTS_ENV", "main"]

FAULTS_ENV: Final = ENV_VAR


def _wrap(provider: CloudProvider) -> CloudProvider:
    return from_env(provider, os.environ)


def main() -> int:
    return run(parse(sys.argv[1:]), wrap=_wrap)


if __name__ == "__main__":
    sys.exit(main())
