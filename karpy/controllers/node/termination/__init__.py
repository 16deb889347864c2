"""Node termination: the `karpenter.sh/termination` finalizer of Nodes (`node.termination`)
and the `eviction-queue` that drains them through the Eviction API."""

from __future__ import annotations

from karpy.controllers.node.termination.controller import MIN_DRAIN_TIME, NodeTerminationController
from karpy.controllers.node.termination.eviction import EvictionQueue, PodKey

__all__ = ["MIN_DRAIN_TIME", "EvictionQueue", "NodeTerminationController", "PodKey"]
