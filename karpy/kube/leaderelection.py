"""Lease-based leader election with client-go's rules and a monotonic clock.

Candidates read the `coordination.k8s.io/v1` Lease and take it when it is free (no holder) or
when its record has not changed for `leaseDurationSeconds` as measured on this process's
monotonic clock (wall clocks of other machines are never compared). Writes use the read
resourceVersion, so exactly one candidate wins a race. The leader renews every `retry_period`;
if it cannot renew for `renew_deadline` it stops leading (`hold()` returns) and the process must
exit, because another replica may take over `lease_duration` after the last renewal. On a clean
shutdown the leader releases the lease (empty holder, 1-second duration) so a standby takes
over at its next retry instead of waiting out the lease.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from karpy.kube import metrics
from karpy.kube.client import Client
from karpy.kube.clock import Clock, RealClock
from karpy.kube.errors import (
    AlreadyExistsError,
    ConflictError,
    KubeError,
    NotFoundError,
)
from karpy.kube.resources import LEASES

__all__ = ["LeaderElectionConfig", "LeaderElector"]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.kube.leaderelection")
_JITTER = 1.2


def _micro_time(moment: datetime) -> str:
    """metav1.MicroTime's wire format."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    """controller-runtime's defaults: 15 s lease, 10 s renew deadline, 2 s retry period."""

    identity: str
    namespace: str = "kube-system"
    name: str = "karpenter-leader-election"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election identity must not be empty")
        if min(self.lease_duration, self.renew_deadline, self.retry_period) < 1.0:
            raise ValueError("lease duration, renew deadline and retry period must be >= 1 s")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("lease duration must be greater than the renew deadline")
        if self.renew_deadline <= _JITTER * self.retry_period:
            raise ValueError("renew deadline must be greater than 1.2 x the retry period")


class LeaderElector:
    """Acquires, holds and releases one Lease."""

    def __init__(
        self, *, client: Client, config: LeaderElectionConfig, clock: Clock | None = None
    ) -> None:
        self.client = client
        self.config = config
        self.clock = clock or RealClock()
        self.is_leader = False
        self._observed_record: tuple[Any, ...] | None = None
        self._observed_time = 0.0
        self._status = metrics.LEADER_ELECTION_STATUS.labels(config.name)
        self._status.set(0)
        self._log = log.bind(lease=f"{config.namespace}/{config.name}", identity=config.identity)

    def _set_leader(self, leading: bool) -> None:
        self.is_leader = leading
        self._status.set(1 if leading else 0)

    @staticmethod
    def _record(lease: JSON) -> tuple[Any, ...]:
        spec = lease.get("spec") or {}
        return (
            spec.get("holderIdentity") or "",
            spec.get("leaseDurationSeconds"),
            spec.get("acquireTime"),
            spec.get("renewTime"),
            spec.get("leaseTransitions"),
        )

    def _observe(self, lease: JSON) -> None:
        record = self._record(lease)
        if record != self._observed_record:
            self._observed_record = record
            self._observed_time = self.clock.now()

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to take or renew the lease; True while this process holds it."""
        cfg = self.config
        now = _micro_time(self.clock.wall())
        try:
            lease = await self.client.get(LEASES, cfg.name, namespace=cfg.namespace)
        except NotFoundError:
            body: JSON = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": {
                    "holderIdentity": cfg.identity,
                    "leaseDurationSeconds": round(cfg.lease_duration),
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseTransitions": 0,
                },
            }
            try:
                created = await self.client.create(LEASES, body)
            except (AlreadyExistsError, ConflictError):
                return False
            self._observe(created)
            return True
        self._observe(lease)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        duration = spec.get("leaseDurationSeconds") or cfg.lease_duration
        if (
            holder
            and holder != cfg.identity
            and self._observed_time + float(duration) > self.clock.now()
        ):
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        ours = holder == cfg.identity
        lease["spec"] = {
            **spec,
            "holderIdentity": cfg.identity,
            "leaseDurationSeconds": round(cfg.lease_duration),
            "acquireTime": spec.get("acquireTime") if ours else now,
            "renewTime": now,
            "leaseTransitions": transitions if ours else transitions + 1,
        }
        try:
            updated = await self.client.update(LEASES, lease)
        except ConflictError:
            return False
        self._observe(updated)
        return True

    async def _attempt(self, budget: float) -> bool:
        try:
            async with asyncio.timeout(max(budget, 0.1)):
                return await self.try_acquire_or_renew()
        except (KubeError, TimeoutError) as exc:
            self._log.info("lease attempt failed", error=str(exc) or type(exc).__name__)
            return False

    async def acquire(self) -> None:
        """Try every retry period (jittered) until this process holds the lease."""
        cfg = self.config
        self._log.info("attempting to acquire leader lease")
        while True:
            if await self._attempt(cfg.renew_deadline):
                self._set_leader(True)
                self._log.info("successfully acquired lease")
                return
            await self.clock.sleep(cfg.retry_period * random.uniform(1.0, _JITTER))

    async def hold(self) -> None:
        """Renew every retry period; return once renewal has failed for the renew deadline."""
        cfg = self.config
        last_renew = self.clock.now()
        while True:
            await self.clock.sleep(cfg.retry_period)
            remaining = cfg.renew_deadline - (self.clock.now() - last_renew)
            if remaining > 0 and await self._attempt(remaining):
                last_renew = self.clock.now()
                continue
            if self.clock.now() - last_renew >= cfg.renew_deadline:
                self._set_leader(False)
                self._log.error(
                    "leader election lost", seconds_since_renewal=self.clock.now() - last_renew
                )
                return

    async def release(self, *, within: float = 5.0) -> bool:
        """Give the lease up so a standby can take over at once; True if released."""
        if not self.is_leader:
            return False
        cfg = self.config
        self._set_leader(False)
        try:
            async with asyncio.timeout(within):
                lease = await self.client.get(LEASES, cfg.name, namespace=cfg.namespace)
                spec = lease.get("spec") or {}
                if (spec.get("holderIdentity") or "") != cfg.identity:
                    return False
                now = _micro_time(self.clock.wall())
                lease["spec"] = {
                    **spec,
                    "holderIdentity": None,
                    "leaseDurationSeconds": 1,
                    "acquireTime": now,
                    "renewTime": now,
                }
                await self.client.update(LEASES, lease)
        except (KubeError, TimeoutError) as exc:
            self._log.warning("could not release the lease", error=str(exc) or type(exc).__name__)
            return False
        self._log.info("released leader lease")
        return True
