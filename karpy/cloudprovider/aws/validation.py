"""The dry-run authorization checks behind an EC2NodeClass's `ValidationSucceeded` (reference
§1.3, Karpenter's `validation.go`).

A class whose subnets, security groups, AMIs and instance profile resolved is only worth
launching with if the controller may create a launch template, a fleet and instances with them:
EC2 answers `DryRunOperation` when a `DryRun=True` request would have been allowed and
`UnauthorizedOperation` when it is denied. A denial gives ValidationSucceeded=False with the
reason Karpenter uses and a message naming the denied action, so the class is not Ready and
nothing is launched with it. Results are cached for 30 minutes (Karpenter's `ValidationTTL`)
per hash of the spec and the resolved status, so an unchanged class costs one set of dry-runs
per half hour and an edited one is checked again at once. Throttling and server errors are
raised and not cached: the controller retries.

Right after karpy creates an instance profile, EC2 may not see it yet (IAM is eventually
consistent) and answers `Invalid IAM Instance Profile name`. That is retried here with backoff
(`RETRY_DELAYS`); if it persists, the class is not Ready with InstanceProfileNotFound for now,
but the answer is not cached, so the next reconcile (a minute later) checks again instead of
waiting out the 30 minutes. Karpenter requeues on the same errors.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.aws.v1.ec2nodeclass import AMIStatus, EC2NodeClass, SubnetStatus
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.errors import ClientError, error_code, error_message

__all__ = ["RETRY_DELAYS", "VALIDATION_TTL", "DryRunValidator", "ValidationResult"]

VALIDATION_TTL: Final = timedelta(minutes=30)
RETRY_DELAYS: Final = (1.0, 2.0, 4.0)
"""Seconds waited before each retry of a check that met IAM's eventual consistency."""
_IAM_NOT_YET: Final = ("Invalid IAM Instance Profile name", "Invalid IAM Instance Profile ARN")
# Karpenter's fallback types when none is prioritized: one per architecture.
_FALLBACK_TYPES: Final = {"amd64": "m5.large", "arm64": "m6g.large"}
_DRY_RUN_OK: Final = "DryRunOperation"
_DENIED: Final = "UnauthorizedOperation"


@dataclass(frozen=True)
class ValidationResult:
    """ValidationSucceeded as the checks found it: ok, or the reason and a message."""

    ok: bool
    reason: str = aws.CONDITION_VALIDATION_SUCCEEDED
    message: str = ""
    transient: bool = False
    """The failure may be IAM's eventual consistency: retried, and never cached."""


_OK: Final = ValidationResult(True)


@dataclass(frozen=True)
class _Inputs:
    """What the checks send, taken from the resolved status."""

    name: str
    subnets: Sequence[SubnetStatus]
    security_groups: Sequence[str]
    amis: Sequence[AMIStatus]
    instance_profile: str | None


class DryRunValidator:
    """Runs CreateLaunchTemplate, CreateFleet and RunInstances with `DryRun=True` for a class,
    caching each class's result for `ttl` on an injectable clock."""

    def __init__(
        self,
        clients: AWSClients,
        *,
        cluster_name: str,
        clock: Callable[[], float] = time.monotonic,
        ttl: timedelta = VALIDATION_TTL,
        retry_delays: Sequence[float] = RETRY_DELAYS,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.clients = clients
        self.cluster_name = cluster_name
        self._clock = clock
        self._ttl = ttl.total_seconds()
        self._retry_delays = tuple(retry_delays)
        self._sleep = sleep
        self._cache: dict[str, tuple[float, ValidationResult]] = {}

    async def validate(
        self,
        nodeclass: EC2NodeClass,
        *,
        subnets: Sequence[SubnetStatus],
        security_groups: Sequence[str],
        amis: Sequence[AMIStatus],
        instance_profile: str | None,
    ) -> ValidationResult:
        inputs = _Inputs(
            nodeclass.metadata.name or "",
            subnets,
            security_groups,
            amis,
            instance_profile,
        )
        key = _cache_key(nodeclass, inputs)
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        result = await self._check(inputs, nodeclass.spec.tags or {})
        for delay in self._retry_delays:
            if not result.transient:
                break
            await self._sleep(delay)
            result = await self._check(inputs, nodeclass.spec.tags or {})
        self._cache = {k: v for k, v in self._cache.items() if now - v[0] < self._ttl}
        if not result.transient:
            self._cache[key] = (now, result)
        return result

    async def _check(self, inputs: _Inputs, user_tags: Mapping[str, str]) -> ValidationResult:
        instance_type = _instance_type(inputs.amis)
        template = f"karpenter.k8s.aws/validation/{inputs.name}"
        tags = _tag_list(
            {
                **user_tags,
                aws.TAG_EKS_CLUSTER_NAME: self.cluster_name,
                aws.TAG_NODECLASS: inputs.name,
            }
        )
        data: dict[str, Any] = {
            "ImageId": inputs.amis[0].id,
            "InstanceType": instance_type,
            "SecurityGroupIds": list(inputs.security_groups),
            "TagSpecifications": [
                {"ResourceType": kind, "Tags": tags}
                for kind in ("instance", "volume", "network-interface")
            ],
        }
        if inputs.instance_profile:
            data["IamInstanceProfile"] = {"Name": inputs.instance_profile}
        spec = {"LaunchTemplateName": template, "Version": "$Latest"}
        async with self.clients.client("ec2") as ec2:
            denied = await _dry_run(
                "CreateLaunchTemplate",
                ec2.create_launch_template,
                DryRun=True,
                LaunchTemplateName=template,
                LaunchTemplateData=data,
                TagSpecifications=[{"ResourceType": "launch-template", "Tags": tags}],
            )
            if denied is not None:
                return denied
            denied = await _dry_run(
                "CreateFleet",
                ec2.create_fleet,
                DryRun=True,
                Type="instant",
                TargetCapacitySpecification={
                    "TotalTargetCapacity": 1,
                    "DefaultTargetCapacityType": "on-demand",
                },
                LaunchTemplateConfigs=[
                    {
                        "LaunchTemplateSpecification": spec,
                        "Overrides": [
                            {"InstanceType": instance_type, "SubnetId": s.id}
                            for s in inputs.subnets
                        ],
                    }
                ],
                TagSpecifications=[{"ResourceType": "fleet", "Tags": tags}],
            )
            if denied is not None:
                return denied
            # Tried per subnet until one passes; a denial is final (it is not per subnet).
            failure: ValidationResult | None = None
            for subnet in inputs.subnets:
                failure = await _dry_run(
                    "RunInstances",
                    ec2.run_instances,
                    DryRun=True,
                    MinCount=1,
                    MaxCount=1,
                    LaunchTemplate=spec,
                    SubnetId=subnet.id,
                    TagSpecifications=data["TagSpecifications"],
                )
                if failure is None or failure.reason == _reason("RunInstances"):
                    break
            return failure or _OK


def _reason(action: str) -> str:
    return f"{action}AuthCheckFailed"


async def _dry_run(action: str, call: Any, **request: Any) -> ValidationResult | None:
    """None when the dry-run says the call would be allowed, else why it would fail."""
    try:
        await call(**request)
    except ClientError as error:
        code = error_code(error)
        message = error_message(error)
        if code == _DRY_RUN_OK:
            return None
        if code == _DENIED:
            return ValidationResult(
                False,
                _reason(action),
                f"dry-run authorization check failed: ec2:{action} is not allowed "
                f"(UnauthorizedOperation: {message})",
            )
        if code == "InvalidParameterValue" and any(m in message for m in _IAM_NOT_YET):
            return ValidationResult(
                False,
                aws.REASON_INSTANCE_PROFILE_NOT_FOUND,
                f"ec2:{action}: {message} (a new instance profile can take a while to reach "
                "EC2; checked again at the next reconcile)",
                transient=True,
            )
        if code == "InvalidUserData.Malformed" and "User data is limited to" in message:
            return ValidationResult(
                False, aws.REASON_USER_DATA_SIZE_LIMIT_EXCEEDED, f"ec2:{action}: {message}"
            )
        raise
    # A dry-run that went through means the endpoint ignored DryRun; nothing was denied.
    return None


def _instance_type(amis: Sequence[AMIStatus]) -> str:
    for ami in amis:
        for req in ami.requirements or ():
            if req.key == "kubernetes.io/arch":
                for arch in req.values or ():
                    if arch in _FALLBACK_TYPES:
                        return _FALLBACK_TYPES[arch]
    return _FALLBACK_TYPES["amd64"]


def _tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def _cache_key(nodeclass: EC2NodeClass, inputs: _Inputs) -> str:
    """The spec and the resolved status, hashed (the hash annotations are left out: they are
    stamped after the first check and would only make it run twice)."""
    body = {
        "name": inputs.name,
        "uid": nodeclass.metadata.uid,
        "spec": nodeclass.spec.to_dict(),
        "subnets": [s.to_dict() for s in inputs.subnets],
        "securityGroups": list(inputs.security_groups),
        "amis": [a.to_dict() for a in inputs.amis],
        "instanceProfile": inputs.instance_profile,
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
