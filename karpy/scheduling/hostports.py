"""Host port conflicts, as kube-scheduler's NodePorts plugin decides them.

Two uses of a host port conflict when protocol and port match and either binds every address
(`hostIP` unset or `0.0.0.0`) or both bind the same one.
"""

from __future__ import annotations

from collections.abc import Set

__all__ = ["WILDCARD", "HostPort", "conflicts"]

HostPort = tuple[str, str, int]
"""(hostIP, protocol, hostPort); `hostIP` is `0.0.0.0` when the pod leaves it out."""

WILDCARD = "0.0.0.0"


def conflicts(wanted: Set[HostPort], used: Set[HostPort]) -> bool:
    """Whether any of `wanted` clashes with a port in `used`."""
    if not wanted or not used:
        return False
    if not wanted.isdisjoint(used):
        return True
    for ip, protocol, port in wanted:
        if (WILDCARD, protocol, port) in used:
            return True
        if ip == WILDCARD and any(u[1] == protocol and u[2] == port for u in used):
            return True
    return False
