"""karpy: a Kubernetes node autoscaler in Python, API-compatible with Karpenter v1."""

from __future__ import annotations

__version__ = "0.1.0"
