"""The IAM policy shipped for karpy (manifests/examples/iam-policy.json) allows every EC2, SSM,
IAM, EKS and Pricing operation the AWS provider's code calls, and nothing of those services
that it neither calls nor needs implicitly.

The calls are found in the source: every operation of those services (botocore's models) whose
Python name (`create_fleet`, `"describe_subnets"`) appears in karpy/cloudprovider/aws.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any, Final

import botocore.session  # type: ignore[import-untyped]
from botocore import xform_name

REPO: Final = Path(__file__).parents[4]
SOURCE: Final = REPO / "karpy" / "cloudprovider" / "aws"
POLICY: Final = REPO / "manifests" / "examples" / "iam-policy.json"
SERVICES: Final = ("ec2", "ssm", "iam", "eks", "pricing")
# Needed without a call of that name: EC2 checks RunInstances on a CreateFleet and CreateTags
# for TagSpecifications; IAM checks PassRole on a launch with an instance profile and
# TagInstanceProfile for CreateInstanceProfile(Tags=...).
IMPLIED: Final = {"ec2:RunInstances", "ec2:CreateTags", "iam:PassRole", "iam:TagInstanceProfile"}


def _source() -> str:
    return "\n".join(p.read_text() for p in sorted(SOURCE.rglob("*.py")))


@cache
def calls() -> frozenset[str]:
    session = botocore.session.get_session()
    text = _source()
    found = set()
    for service in SERVICES:
        model = session.get_service_model(service)
        prefix = model.metadata.get("signingName") or model.metadata["endpointPrefix"]
        for operation in model.operation_names:
            if re.search(rf"\b{xform_name(operation)}\b", text):
                found.add(f"{prefix}:{operation}")
    return frozenset(found)


def allowed() -> set[str]:
    policy: dict[str, Any] = json.loads(POLICY.read_text())
    actions: set[str] = set()
    for statement in policy["Statement"]:
        assert statement["Effect"] == "Allow"
        listed = statement["Action"]
        actions |= {listed} if isinstance(listed, str) else set(listed)
    return actions


def test_every_call_is_allowed() -> None:
    used = calls()
    assert {"ec2:CreateFleet", "ec2:DescribeSubnets", "eks:DescribeCluster"} <= used
    assert sorted(used - allowed()) == []


def test_nothing_else_of_those_services_is_allowed() -> None:
    ours = {a for a in allowed() if a.split(":")[0] in SERVICES}
    assert sorted(ours - calls() - IMPLIED) == []
