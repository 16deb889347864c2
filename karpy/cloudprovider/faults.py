"""TEST ONLY: a cloud-provider decorator that injects faults at the provider seam.

Tests need clouds that misbehave on demand — a launch that fails a few times, an instance whose
Node never registers — and the real providers cannot do that. `FaultyCloudProvider` wraps any
provider and, following a `FaultPlan`, fails or fakes calls before they reach it; everything
else passes through unchanged.

`karpy run` itself never applies one: the end-to-end tests start `python -m
tests.e2e.faulty_karpy run`, which passes `karpy.operator.run` a decorator built by `from_env`
from the environment variable `KARPY_TEST_PROVIDER_FAULTS`. Its grammar is a comma-
separated list of `fault[=count]`:

- `create-error=N`: the first N creates raise `CreateError` (the launch is retried);
- `insufficient-capacity=N`: the first N creates raise `InsufficientCapacityError`;
- `never-register[=N]`: the first N creates (all, without `=N`) "succeed" without launching
  anything, so no Node ever appears for the NodeClaim (the registration timeout's case). The
  phantom instance answers `get`, `list` and `delete` until it is deleted;
- `delete-error=N`: the first N deletes raise a transient `CloudProviderError`.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

import structlog

from karpy.apis.v1 import NodeClaim, NodeClaimStatus, NodePool
from karpy.cloudprovider.types import (
    CloudProvider,
    CloudProviderError,
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    RepairPolicy,
)
from karpy.scheduling.instancetypes import InstanceType

__all__ = [
    "ENV_VAR",
    "PHANTOM_PREFIX",
    "FaultPlan",
    "FaultPlanError",
    "FaultyCloudProvider",
    "from_env",
]

ENV_VAR: Final = "KARPY_TEST_PROVIDER_FAULTS"
"""Test-only: the fault plan the e2e entry wraps the provider with (unset: no faults)."""
ALL: Final = -1
PHANTOM_PREFIX: Final = "phantom://"
"""ProviderIDs of phantom instances: no provider (nor the kwok node simulator) knows them."""
REASON_FAULT_INJECTED: Final = "FaultInjected"
log = structlog.get_logger("karpy.cloudprovider.faults")
_FAULTS: Final = {
    "create-error": "create_errors",
    "insufficient-capacity": "insufficient_capacity",
    "never-register": "never_register",
    "delete-error": "delete_errors",
}


class FaultPlanError(ValueError):
    """A fault plan string is malformed; the message names the bad item."""


@dataclass(slots=True)
class FaultPlan:
    """How many calls of each kind fail; counts go down as faults are injected (`ALL`: every)."""

    create_errors: int = 0
    insufficient_capacity: int = 0
    never_register: int = 0
    delete_errors: int = 0

    @classmethod
    def parse(cls, text: str) -> FaultPlan:
        """`"create-error=2,never-register"` -> a plan; `FaultPlanError` names a bad item."""
        plan = cls()
        for item in (part.strip() for part in text.split(",")):
            if not item:
                continue
            name, sep, count = item.partition("=")
            attribute = _FAULTS.get(name.strip())
            if attribute is None:
                known = ", ".join(_FAULTS)
                raise FaultPlanError(f"{ENV_VAR}: unknown fault {name!r} (known: {known})")
            if not sep:
                setattr(plan, attribute, ALL)
                continue
            try:
                value = int(count)
            except ValueError:
                raise FaultPlanError(f"{ENV_VAR}: {item!r} needs a whole number") from None
            if value < 0:
                raise FaultPlanError(f"{ENV_VAR}: {item!r} must not be negative")
            setattr(plan, attribute, value)
        return plan

    def take(self, attribute: str) -> bool:
        """Use one fault of this kind if any is left."""
        left: int = getattr(self, attribute)
        if left == 0:
            return False
        if left > 0:
            setattr(self, attribute, left - 1)
        return True

    def __bool__(self) -> bool:
        return any(getattr(self, a) for a in _FAULTS.values())


@dataclass(slots=True)
class _Phantom:
    claim: NodeClaim
    deleting: bool = False


@dataclass
class FaultyCloudProvider:
    """Wraps `inner`, injecting the faults of `plan`; otherwise calls pass straight through."""

    inner: CloudProvider
    plan: FaultPlan
    phantoms: dict[str, _Phantom] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.inner.name

    async def create(self, claim: NodeClaim) -> NodeClaim:
        if self.plan.take("insufficient_capacity"):
            raise InsufficientCapacityError(f"injected fault: no capacity for {claim.name}")
        if self.plan.take("create_errors"):
            raise CreateError(
                f"injected fault: launching {claim.name} failed", reason=REASON_FAULT_INJECTED
            )
        if self.plan.take("never_register"):
            return self._phantom(claim)
        return await self.inner.create(claim)

    def _phantom(self, claim: NodeClaim) -> NodeClaim:
        """An instance that exists only here: launched, but no Node will ever register."""
        provider_id = f"{PHANTOM_PREFIX}{claim.name}"
        existing = self.phantoms.get(provider_id)
        if existing is not None:
            return existing.claim.model_copy(deep=True)
        launched = claim.model_copy(deep=True)
        launched.metadata.creation_timestamp = datetime.now(UTC)
        labels = dict(launched.metadata.labels or {})
        for requirement in claim.spec.requirements:
            if requirement.operator == "In" and requirement.values:
                labels.setdefault(requirement.key, sorted(requirement.values)[0])
        launched.metadata.labels = labels
        requests = dict((claim.spec.resources.requests or {}) if claim.spec.resources else {})
        launched.status = NodeClaimStatus(
            provider_id=provider_id, capacity=requests, allocatable=requests
        )
        self.phantoms[provider_id] = _Phantom(launched)
        log.warning("injected fault: launched a phantom instance", NodeClaim={"name": claim.name})
        return launched.model_copy(deep=True)

    async def delete(self, claim: NodeClaim) -> None:
        if self.plan.take("delete_errors"):
            raise CloudProviderError(f"injected fault: deleting {claim.name} failed")
        provider_id = claim.status.provider_id if claim.status else None
        if provider_id in self.phantoms:
            del self.phantoms[provider_id]
            raise NodeClaimNotFoundError(f"instance {provider_id} terminated")
        await self.inner.delete(claim)

    async def get(self, provider_id: str) -> NodeClaim:
        phantom = self.phantoms.get(provider_id)
        if phantom is not None:
            return phantom.claim.model_copy(deep=True)
        return await self.inner.get(provider_id)

    async def list(self) -> builtins.list[NodeClaim]:
        found = await self.inner.list()
        return [*found, *(p.claim.model_copy(deep=True) for p in self.phantoms.values())]

    async def get_instance_types(self, nodepool: NodePool) -> builtins.list[InstanceType]:
        return await self.inner.get_instance_types(nodepool)

    async def is_drifted(self, claim: NodeClaim) -> str | None:
        return await self.inner.is_drifted(claim)

    def repair_policies(self) -> builtins.list[RepairPolicy]:
        return self.inner.repair_policies()


def from_env(provider: CloudProvider, environ: Mapping[str, str] | None = None) -> CloudProvider:
    """TEST ONLY: `provider` wrapped with the plan in `KARPY_TEST_PROVIDER_FAULTS`, or
    `provider` itself when the variable is unset or empty."""
    text = (os.environ if environ is None else environ).get(ENV_VAR, "")
    if not text.strip():
        return provider
    plan = FaultPlan.parse(text)
    log.warning(
        "test-only provider faults are enabled; never set this in a real deployment",
        variable=ENV_VAR,
        plan=text,
    )
    return FaultyCloudProvider(inner=provider, plan=plan)
