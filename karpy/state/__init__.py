"""karpy's model of the cluster: Nodes joined to NodeClaims, the pods on them, DaemonSet
overhead, in-flight and marked-for-deletion nodes, nominations and NodePool totals.

from karpy.state import Cluster, StateNode

The names are loaded on first use: `karpy simulate` needs `karpy.state.inputs`, not the
informer-backed `Cluster` and the Kubernetes client behind it (seconds of imports).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.lazy import lazy_attributes

if TYPE_CHECKING:
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

_HOME = {
    "DEFAULT_NOMINATION_WINDOW": "karpy.state.cluster",
    "Cluster": "karpy.state.cluster",
    "ClusterSnapshot": "karpy.state.cluster",
    "nomination_window": "karpy.state.cluster",
    "PodViews": "karpy.state.inputs",
    "existing_node": "karpy.state.inputs",
    "StateNode": "karpy.state.statenode",
    "claim_condition": "karpy.state.statenode",
}


__getattr__ = lazy_attributes(__name__, _HOME)
