"""`karpenter_build_info`: a constant 1 labelled by what this karpy is, present from start-up.

Karpenter's labels are kept so its dashboards' queries match; `goversion` carries the Python
version and `goarch` the machine, as karpy is not built with Go.
"""

from __future__ import annotations

import platform

from prometheus_client import Gauge

from karpy import __version__
from karpy.buildinfo import commit
from karpy.kube.metrics import REGISTRY

__all__ = ["BUILD_INFO"]

BUILD_INFO = Gauge(
    "karpenter_build_info",
    "A metric with a constant '1' value labeled by version from which karpenter was built.",
    ["version", "goversion", "goarch", "commit"],
    registry=REGISTRY,
)
BUILD_INFO.labels(
    __version__, f"python{platform.python_version()}", platform.machine(), commit()
).set(1)
