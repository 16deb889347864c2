"""Initialization: a registered Node is ready for pods.

All must hold: the Node is Ready; none of the NodeClaim's startup taints is left; no known
ephemeral taint is left (not-ready, unreachable, uninitialized, unregistered, `readiness.k8s.io/`
keys); every resource the NodeClaim requested is allocatable on the Node (device plugins have
registered). `why_not_initialized` returns the first reason that fails, as Karpenter reports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from karpy.apis.objects import is_node_ready, taint_matches
from karpy.apis.v1 import conditions as c
from karpy.apis.v1 import labels
from karpy.scheduling.resources import parse_resources

__all__ = ["EPHEMERAL_TAINTS", "why_not_initialized"]

EPHEMERAL_TAINTS: tuple[Mapping[str, str], ...] = (
    {"key": labels.TAINT_NOT_READY_KEY, "effect": labels.TAINT_EFFECT_NO_SCHEDULE},
    {"key": labels.TAINT_NOT_READY_KEY, "effect": labels.TAINT_EFFECT_NO_EXECUTE},
    {"key": labels.TAINT_UNREACHABLE_KEY, "effect": labels.TAINT_EFFECT_NO_SCHEDULE},
    {"key": labels.TAINT_UNINITIALIZED_KEY, "effect": labels.TAINT_EFFECT_NO_SCHEDULE},
    {"key": labels.TAINT_UNREGISTERED_KEY, "effect": labels.TAINT_EFFECT_NO_EXECUTE},
)


def _taint_text(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    key = f"{taint.get('key')}={value}" if value else str(taint.get("key"))
    return f"{key}:{taint.get('effect')}"


def why_not_initialized(
    node: Mapping[str, Any], claim: Mapping[str, Any]
) -> tuple[str, str] | None:
    """(reason, message) of the first unmet condition, or None when initialized."""
    if not is_node_ready(node):
        return c.REASON_NODE_NOT_READY, "Node status is NotReady"
    node_taints = list((node.get("spec") or {}).get("taints") or ())
    for startup in (claim.get("spec") or {}).get("startupTaints") or ():
        if any(taint_matches(startup, t) for t in node_taints):
            return (
                c.REASON_STARTUP_TAINTS_EXIST,
                f'StartupTaint "{_taint_text(startup)}" still exists',
            )
    for taint in node_taints:
        if any(taint_matches(taint, e) for e in EPHEMERAL_TAINTS) or str(
            taint.get("key") or ""
        ).startswith(labels.EPHEMERAL_TAINT_PREFIX):
            return (
                c.REASON_KNOWN_EPHEMERAL_TAINTS_EXIST,
                f'KnownEphemeralTaint "{_taint_text(taint)}" still exists',
            )
    requests = parse_resources(
        ((claim.get("spec") or {}).get("resources") or {}).get("requests"),
        field="spec.resources.requests",
    )
    allocatable = parse_resources(
        (node.get("status") or {}).get("allocatable"), field="status.allocatable"
    )
    for name, amount in sorted(requests.items()):
        if amount and not allocatable.get(name):
            return (
                c.REASON_RESOURCE_NOT_REGISTERED,
                f'Resource "{name}" was requested but not registered',
            )
    return None
