"""Every custom resource karpy serves, and validation of any of them by apiVersion and kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from karpy.apis.autoscaling.v1beta1.capacitybuffer import CAPACITYBUFFER
from karpy.apis.aws.v1.ec2nodeclass import EC2NODECLASS
from karpy.apis.azure.v1beta1.aksnodeclass import AKSNODECLASS
from karpy.apis.errors import FieldError, ValidationError
from karpy.apis.kwok.v1alpha1.kwoknodeclass import KWOKNODECLASS
from karpy.apis.resource import CustomResource
from karpy.apis.schema import K8sModel
from karpy.apis.v1.nodeclaim import NODECLAIM
from karpy.apis.v1.nodepool import NODEPOOL
from karpy.apis.v1.schedulingconfig import SCHEDULINGCONFIG
from karpy.apis.v1alpha1.nodeoverlay import NODEOVERLAY

RESOURCES: Final[tuple[CustomResource[Any], ...]] = (
    NODEPOOL,
    NODECLAIM,
    EC2NODECLASS,
    AKSNODECLASS,
    KWOKNODECLASS,
    SCHEDULINGCONFIG,
    NODEOVERLAY,
    CAPACITYBUFFER,
)
BY_TYPE: Final[dict[tuple[str, str], CustomResource[Any]]] = {
    (r.api_version, r.kind): r for r in RESOURCES
}


def resource_for(api_version: str, kind: str) -> CustomResource[Any] | None:
    """The resource served at apiVersion/kind, if it is one of ours."""
    return BY_TYPE.get((api_version, kind))


def validate_object(obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> K8sModel:
    """Validate any of our kinds by its apiVersion and kind; raises ValidationError."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    resource = resource_for(api_version, kind)
    if resource is None:
        raise ValidationError(
            kind=kind or "object",
            name=None,
            errors=[FieldError("kind", f"Unsupported value: {kind!r} in {api_version!r}")],
        )
    model: K8sModel = resource.validate(obj, old=old)
    return model
