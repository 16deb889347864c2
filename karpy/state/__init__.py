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
from karpy.state.resources import (
    CRD_RESOURCES,
    EC2NODECLASSES,
    KWOKNODECLASSES,
    NODECLAIMS,
    NODEPOOLS,
)
from karpy.state.simulation import PodViews, existing_node
from karpy.state.statenode import StateNode, claim_condition

__all__ = [
    "CRD_RESOURCES",
    "DEFAULT_NOMINATION_WINDOW",
    "EC2NODECLASSES",
    "KWOKNODECLASSES",
    "NODECLAIMS",
    "NODEPOOLS",
    "Cluster",
    "ClusterSnapshot",
    "PodViews",
    "StateNode",
    "claim_condition",
    "existing_node",
    "nomination_window",
]
