"""An EC2NodeClass written through a newer CRD than karpy's model is still usable: the fields
karpy does not know are left out (and named in a warning), any other error still fails."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from structlog.testing import capture_logs

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.apis.schema import validate_known
from karpy.cloudprovider.aws.nodeclassread import read_nodeclass


def nodeclass(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": "KarpenterNodeRole-prod",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
            **spec,
        },
    }


def test_unknown_fields_are_left_out_and_named() -> None:
    obj = nodeclass(
        "newer",
        enclaveOptions={"enabled": True},
        metadataOptions={"httpTokens": "required", "httpFuture": "on"},
        blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "x": 1}}],
        detailedMonitoring=True,
    )
    with pytest.raises(ValidationError):
        EC2NodeClass.model_validate(obj)
    model, ignored = validate_known(EC2NodeClass, obj)
    assert sorted(ignored) == [
        "spec.blockDeviceMappings.0.ebs.x",
        "spec.enclaveOptions",
        "spec.metadataOptions.httpFuture",
    ]
    assert model.spec.detailed_monitoring is True
    assert model.spec.metadata_options.http_tokens == "required"
    assert obj["spec"]["enclaveOptions"] == {"enabled": True}  # the input is not changed


def test_a_warning_names_the_ignored_fields_once() -> None:
    obj = nodeclass("warned", enclaveOptions={"enabled": True})
    with capture_logs() as logs:
        first = read_nodeclass(obj)
        read_nodeclass(obj)
    assert first.metadata.name == "warned"
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert len(warnings) == 1
    assert warnings[0]["fields"] == ["spec.enclaveOptions"]
    assert warnings[0]["EC2NodeClass"] == {"name": "warned"}


def test_other_errors_still_fail() -> None:
    obj = nodeclass("broken", enclaveOptions={"enabled": True}, detailedMonitoring="often")
    with pytest.raises(ValidationError, match="detailedMonitoring"):
        read_nodeclass(obj)
