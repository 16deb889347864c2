"""CapacityBuffers' `Provisioning` condition, written by the provisioner after each pass.

Only a scheduling pass knows where a buffer's virtual pods went, so the provisioner, not the
buffer's status controller, says whether the room exists — with Karpenter's reasons and
messages, so that scripts and `kubectl wait` written against Karpenter read the same:

- `NotReadyForProvisioning` (False) while the buffer is not `ReadyForProvisioning`;
- `BufferEmpty` (False) when it resolved to zero replicas;
- `RequiresNewCapacity` (False) when any virtual pod needed a new NodeClaim or fit nowhere;
- `FitsExistingCapacity` (True) when every one of them fit on existing (or in-flight) nodes.

A ready buffer none of whose virtual pods were in the pass keeps its condition as it was.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from karpy.apis.autoscaling.v1beta1 import (
    CONDITION_PROVISIONING,
    CONDITION_READY_FOR_PROVISIONING,
    REASON_BUFFER_EMPTY,
    REASON_FITS_EXISTING_CAPACITY,
    REASON_NOT_READY_FOR_PROVISIONING,
    REASON_REQUIRES_NEW_CAPACITY,
)
from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import CAPACITYBUFFERS
from karpy.apis.objects import is_condition_true
from karpy.controllers.common.status import write_conditions
from karpy.kube.client import Client
from karpy.kube.errors import KubeError
from karpy.scheduling.engine.model import SchedulingResult

__all__ = ["Placement", "provisioning_condition", "tally", "write_provisioning"]

JSON = Mapping[str, Any]
log = structlog.get_logger("karpy.controllers.provisioning")


@dataclass
class Placement:
    """Where one buffer's virtual pods went in a pass."""

    existing: int = 0
    new: int = 0
    failed: int = 0


def _key(buffer: JSON) -> str:
    meta = buffer.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def _replicas(buffer: JSON) -> int | None:
    value = (buffer.get("status") or {}).get("replicas")
    return int(value) if isinstance(value, int) else None


def _virtual_keys(buffers: Iterable[JSON]) -> dict[str, str]:
    """Virtual pod key -> its buffer's key (`karpy.state.inputs.buffers` names the pods
    `capacitybuffer-<buffer>-<i>` in the buffer's namespace, for i below `status.replicas`)."""
    out: dict[str, str] = {}
    for buffer in buffers:
        meta = buffer.get("metadata") or {}
        namespace, name = meta.get("namespace") or "default", meta.get("name") or ""
        for i in range(_replicas(buffer) or 0):
            out[f"{namespace}/capacitybuffer-{name}-{i}"] = _key(buffer)
    return out


def tally(
    buffers: Iterable[JSON], result: SchedulingResult, real: Collection[str]
) -> dict[str, Placement]:
    """Per buffer key, where its virtual pods went; `real` are the keys of the pass's real pods
    (a real pod never counts for a buffer, whatever its name)."""
    owners = _virtual_keys(buffers)
    out: dict[str, Placement] = {}

    def owner(key: str) -> Placement | None:
        buffer = owners.get(key) if key not in real else None
        return None if buffer is None else out.setdefault(buffer, Placement())

    for views in result.existing.values():
        for view in views:
            if (found := owner(view.key)) is not None:
                found.existing += 1
    for claim in result.node_claims:
        for view in claim.pods:
            if (found := owner(view.key)) is not None:
                found.new += 1
    for key in result.errors:
        if (found := owner(key)) is not None:
            found.failed += 1
    return out


def provisioning_condition(
    buffer: JSON, placement: Placement | None
) -> tuple[str, str, str] | None:
    """The `Provisioning` condition (status, reason, message) for a buffer after a pass, or
    None to leave it as it is."""
    if not is_condition_true(buffer, CONDITION_READY_FOR_PROVISIONING):
        return "False", REASON_NOT_READY_FOR_PROVISIONING, "Buffer is not ReadyForProvisioning"
    desired = _replicas(buffer)
    if not desired:
        return "False", REASON_BUFFER_EMPTY, "Buffer has zero desired replicas"
    if placement is None:
        return None
    if placement.new or placement.failed:
        return (
            "False",
            REASON_REQUIRES_NEW_CAPACITY,
            f"{placement.new}/{desired} virtual pods required new capacity, "
            f"{placement.failed} failed",
        )
    if placement.existing == desired:
        return (
            "True",
            REASON_FITS_EXISTING_CAPACITY,
            f"All {desired} virtual pods fit on existing capacity",
        )
    return None


async def write_provisioning(
    client: Client,
    *,
    buffers: Iterable[JSON],
    result: SchedulingResult,
    real: Collection[str],
    now: datetime,
) -> None:
    """Write every buffer's `Provisioning` condition after a pass. A failed write is logged
    and left to the next pass (a buffer's pass comes again within 10 s)."""
    listed = [b for b in buffers if not (b.get("metadata") or {}).get("deletionTimestamp")]
    placements = tally(listed, result, real)
    for buffer in listed:
        wanted = provisioning_condition(buffer, placements.get(_key(buffer)))
        if wanted is None:
            continue
        status, reason, message = wanted
        conditions = Conditions.of(buffer, now=now)
        if not conditions.set(CONDITION_PROVISIONING, status, reason=reason, message=message):
            continue
        try:
            await write_conditions(
                client, resource=CAPACITYBUFFERS, obj=buffer, conditions=conditions
            )
        except KubeError as err:
            log.info(
                "could not write capacity buffer status",
                CapacityBuffer=_key(buffer),
                error=str(err),
            )
