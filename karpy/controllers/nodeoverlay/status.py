"""`nodeoverlay.controller`: whether each NodeOverlay applies, in Karpenter's condition names.

Every reconcile judges all overlays together, as the provisioner applies them (the same
`apply_overlays` over every NodePool's instance types): an overlay whose requirements fail
runtime validation is `ValidationSucceeded=False` with reason `RuntimeValidation`; one that sets
an offering price or a resource an overlay of the same weight already set is False with reason
`Conflict` (the provisioner ignores it); the others are True. `Ready` follows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import pydantic
import structlog

from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import NODEOVERLAYS
from karpy.apis.objects import is_deleting
from karpy.apis.v1 import NodePool
from karpy.apis.v1 import conditions as cond
from karpy.apis.v1alpha1 import NodeOverlay, runtime_validate_overlay
from karpy.cloudprovider.types import CloudProvider
from karpy.controllers.common.status import write_conditions
from karpy.kube import Client, Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder
from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.scheduling.overlays import overlays_of
from karpy.state.inputs import overlay_templates

__all__ = ["NAME", "NodeOverlayStatusController", "overlay_errors"]

NAME = "nodeoverlay.controller"
JSON = dict[str, Any]
log = structlog.get_logger("karpy.controllers.nodeoverlay")


def overlay_errors(obj: Mapping[str, Any]) -> list[str]:
    """Every problem of a raw NodeOverlay the CRD does not catch; empty when valid."""
    try:
        overlay = NodeOverlay.model_validate(obj)
    except pydantic.ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False)
        ]
    return runtime_validate_overlay(overlay)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


class NodeOverlayStatusController:
    """Writes every NodeOverlay's conditions when an overlay or a NodePool changes."""

    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        overlays: Informer,
        nodepools: Informer,
        cloud_provider: CloudProvider,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.overlays = overlays
        self.nodepools = nodepools
        self.cloud_provider = cloud_provider
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.overlays, mapper=lambda _o: self._all()).workers(1).log_kind(
            "NodeOverlay"
        )
        builder.watches(self.nodepools, mapper=lambda _pool: self._all())

    def _all(self) -> list[str]:
        return [_name(o) for o in self.overlays.list()]

    async def _templates(self) -> list[NodePoolTemplate]:
        out: list[NodePoolTemplate] = []
        for raw in self.nodepools.list():
            if is_deleting(raw):
                continue
            try:
                types = await self.cloud_provider.get_instance_types(NodePool.model_validate(raw))
                out.append(NodePoolTemplate.from_nodepool(raw, types))
            except Exception as err:  # one broken NodePool must not hide the others' conflicts
                log.error("skipping nodepool", NodePool={"name": _name(raw)}, error=str(err))
        return out

    async def judge(self) -> dict[str, tuple[str, str] | None]:
        """Each overlay's verdict: None when it applies, else (reason, message)."""
        objs = self.overlays.list()
        invalid = {_name(o): errors for o in objs if (errors := overlay_errors(o))}
        readable, unreadable = overlays_of(o for o in objs if _name(o) not in invalid)
        for name, why in unreadable.items():
            invalid[name] = [why]
        result = overlay_templates(await self._templates(), readable)
        verdicts: dict[str, tuple[str, str] | None] = {}
        for obj in objs:
            name = _name(obj)
            if name in invalid:
                verdicts[name] = (
                    cond.REASON_NODEOVERLAY_RUNTIME_VALIDATION,
                    "; ".join(invalid[name]),
                )
            elif name in result.conflicts:
                verdicts[name] = (cond.REASON_NODEOVERLAY_CONFLICT, result.conflicts[name])
            else:
                verdicts[name] = None
        return verdicts

    async def reconcile(self, name: str) -> Result | None:
        overlay = self.overlays.get(name)
        if overlay is None:
            return None
        verdict = (await self.judge()).get(name)
        conditions = Conditions.of(
            overlay, now=self.clock.wall(), dependents=cond.NODEOVERLAY_READY_DEPENDENTS
        )
        if verdict is None:
            conditions.set_true(cond.NODEOVERLAY_VALIDATION_SUCCEEDED)
        else:
            reason, message = verdict
            conditions.set_false(
                cond.NODEOVERLAY_VALIDATION_SUCCEEDED, reason=reason, message=message
            )
        conditions.compute_root()
        return await write_conditions(
            self.client, resource=NODEOVERLAYS, obj=overlay, conditions=conditions
        )
