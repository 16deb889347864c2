"""karpy's model of the cluster: Nodes joined to NodeClaims, the pods on them, DaemonSet
overhead, in-flight and marked-for-deletion nodes, nominations and NodePool totals.

from karpy.state import Cluster, StateNode
"""

from __future__ import annotations

from karpy.state.cluster import (
    DEFAULT_NOMINATION_WINDOW,
    Cluster,
    ClusterSnapshot,
    nomination_window,
)
from karpy.state.inputs import PodViews, existing_node
from karpy.state.statenode import StateNode, claim_condition

__all__ = [
    "DEFAULT_NOMINATION_WINDOW",
    "Cluster",
    "ClusterSnapshot",
    "PodViews",
    "StateNode",
    "claim_condition",
    "existing_node",
    "nomination_window",
]
