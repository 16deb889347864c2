"""The scheduling engine's inputs, built from cluster objects the same way for every planner.

The provisioner (objects from the informer cache) and `karpy simulate` (objects from scenario
files) both call `build_input`, so pods, volume topology, existing nodes and DaemonSet overhead
are read once, alike, and SchedulingConfigs and NodeOverlays apply to both.

from karpy.state.inputs import ClusterObjects, build_input
"""

from __future__ import annotations

from karpy.state.inputs.buffers import (
    ANNOTATION_CAPACITY_BUFFER,
    SCALABLE_KINDS,
    Resolution,
    generated_template_name,
    resolve,
    virtual_pods,
    with_status,
)
from karpy.state.inputs.builder import (
    DRA_UNSUPPORTED,
    NODES_RESOURCE,
    ClusterObjects,
    InputError,
    Inputs,
    build_input,
    nodepool_usage,
)
from karpy.state.inputs.configs import (
    Conflict,
    Guardrail,
    NodeClassKey,
    Parameters,
    conflicts,
    guardrails,
    nodepool_nodeclass,
    parameters,
)
from karpy.state.inputs.nodes import existing_node, join_nodes, node_key, state_nodes
from karpy.state.inputs.overlays import OverlaidTemplates, overlay_templates
from karpy.state.inputs.pods import PodViews, daemonset_pod
from karpy.state.inputs.volumes import VolumeError, VolumeTopology, pod_claim_names

__all__ = [
    "ANNOTATION_CAPACITY_BUFFER",
    "DRA_UNSUPPORTED",
    "NODES_RESOURCE",
    "SCALABLE_KINDS",
    "ClusterObjects",
    "Conflict",
    "Guardrail",
    "InputError",
    "Inputs",
    "NodeClassKey",
    "OverlaidTemplates",
    "Parameters",
    "PodViews",
    "Resolution",
    "VolumeError",
    "VolumeTopology",
    "build_input",
    "conflicts",
    "daemonset_pod",
    "existing_node",
    "generated_template_name",
    "guardrails",
    "join_nodes",
    "node_key",
    "nodepool_nodeclass",
    "nodepool_usage",
    "overlay_templates",
    "parameters",
    "pod_claim_names",
    "resolve",
    "state_nodes",
    "virtual_pods",
    "with_status",
]
