"""`provisioner.trigger.nodeclaim`: a NodeClaim that starts deleting opens a batch once."""

from __future__ import annotations

from typing import Any, cast

from karpy.controllers.provisioning.batcher import Batcher
from karpy.controllers.provisioning.triggers import NodeClaimTrigger
from karpy.kube.clock import FakeClock
from karpy.kube.informer import Informer


class Claims:
    """The one informer call the trigger makes."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        return self.items.get(key)


def claim(name: str, uid: str, *, deleting: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


async def test_a_deleting_nodeclaim_triggers_once_per_uid() -> None:
    claims = Claims()
    clock = FakeClock()
    batcher = Batcher(idle=1.0, maximum=10.0, clock=clock)
    trigger = NodeClaimTrigger(nodeclaims=cast(Informer, claims), batcher=batcher, clock=clock)

    claims.items["a"] = claim("a", "uid-1", deleting=False)
    await trigger.reconcile("a")
    assert batcher.pending == 0  # a live NodeClaim needs nothing

    claims.items["a"] = claim("a", "uid-1", deleting=True)
    await trigger.reconcile("a")
    assert batcher.pending == 1

    batcher._seen.clear()  # the batch closed; later updates of the same deletion do not reopen one
    await trigger.reconcile("a")
    assert batcher.pending == 0

    del claims.items["a"]  # gone; a new NodeClaim of that name deleting triggers again
    await trigger.reconcile("a")
    claims.items["a"] = claim("a", "uid-2", deleting=True)
    await trigger.reconcile("a")
    assert batcher.pending == 1
