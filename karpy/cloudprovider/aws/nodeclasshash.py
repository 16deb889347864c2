"""The EC2NodeClass hash Karpenter stamps as `karpenter.k8s.aws/ec2nodeclass-hash`, version `v6`.

It is Karpenter's own value (AWS provider v1.15), so a cluster moving between Karpenter and karpy
sees no false `NodeClassDrift`. Karpenter computes `hashstructure.Hash([]any{spec, amiFamily,
caBundle, kubelet}, FormatV2, {SlicesAsSets, IgnoreZeroValue, ZeroNil})`:

- `spec` as the Go struct decoded from the JSON: fields tagged `hash:"ignore"` (the selector
  terms, `ipPrefixCount`, `amiFamily`, `kubelet`) are left out, an absent field is a nil pointer
  and skipped, `false`/`""`/`{}` behind a pointer count; `role` and `instanceProfile` count;
  a volume size counts by its canonical quantity (`1024Mi` = `1Gi`);
- the effective AMI family (`spec.amiFamily`, else the alias's family, else `Custom`);
- the CA bundle Karpenter was started with (`CLUSTER_CA_BUNDLE`, else its kubeconfig's CA in
  base64); an absent one is `""`;
- the kubelet block as Go's `json.Marshal` writes it (sorted keys, compact), `null` when empty.

The top-level list is a set: its four hashes are XORed. The golden table
`tests/unit/cloudprovider/aws/ec2nodeclass_hash_golden.json` holds values computed by Karpenter's
code (`hack/ec2nodeclass-hash`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from karpy.apis import hashstructure as hs
from karpy.apis.aws.v1.ec2nodeclass import EC2NodeClass
from karpy.apis.aws.v1.labels import (
    ANNOTATION_EC2NODECLASS_HASH,
    ANNOTATION_EC2NODECLASS_HASH_VERSION,
)
from karpy.scheduling.quantity import QuantityError, parse_quantity

__all__ = ["NODECLASS_HASH_VERSION", "hash_annotations", "nodeclass_hash"]

NODECLASS_HASH_VERSION: Final = "v6"
_ALIAS_FAMILIES: Final = {
    family.lower(): family
    for family in ("AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025")
}
# Go's json.Marshal escapes these inside strings; Python's json.dumps does not.
_GO_ESCAPES: Final = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)

JSON = Mapping[str, Any]


def _obj(value: Any) -> JSON:
    return value if isinstance(value, Mapping) else {}


def _str(value: Any) -> int | None:
    """A `*string` (or a named string type behind a pointer): nil when absent, `""` counts."""
    return None if value is None else hs.string(str(value))


def _plain_str(value: Any) -> int | None:
    """A plain `string` field: `""` is its zero value."""
    return None if value is None or value == "" else hs.string(str(value))


def _bool(value: Any) -> int | None:
    """A `*bool`: false counts."""
    return None if value is None else hs.boolean(bool(value))


def _int64(value: Any) -> int | None:
    return None if value is None else hs.int64(int(value))


def _int32(value: Any) -> int | None:
    return None if value is None else hs.int32(int(value))


def _plain_int32(value: Any) -> int | None:
    """A plain `int32` field: 0 is its zero value."""
    return None if value is None or int(value) == 0 else hs.int32(int(value))


def _quantity(value: Any) -> int | None:
    """A `*resource.Quantity` tagged `hash:"string"`: its canonical `String()`."""
    if value is None:
        return None
    try:
        return hs.string(str(parse_quantity(str(value))))
    except QuantityError:
        return hs.string(str(value))


def _string_map(value: Any) -> int | None:
    if not isinstance(value, Mapping):
        return None
    return hs.mapping({str(k): "" if v is None else str(v) for k, v in value.items()})


def _struct(type_name: str, value: Any, fields: list[tuple[str, int | None]]) -> int | None:
    """A pointer to a struct: nil when absent; an empty object is the bare struct."""
    return None if value is None else hs.struct_of(type_name, fields)


def _list(value: Any, item: Any) -> int | None:
    """A slice under `SlicesAsSets`; a null item is the zero struct (`ZeroNil`)."""
    if not isinstance(value, list):
        return None
    return hs.set_of(item(_obj(element)) for element in value)


def _block_device(ebs: JSON) -> list[tuple[str, int | None]]:
    return [
        ("DeleteOnTermination", _bool(ebs.get("deleteOnTermination"))),
        ("Encrypted", _bool(ebs.get("encrypted"))),
        ("IOPS", _int64(ebs.get("iops"))),
        ("KMSKeyID", _str(ebs.get("kmsKeyID"))),
        ("SnapshotID", _str(ebs.get("snapshotID"))),
        ("Throughput", _int64(ebs.get("throughput"))),
        ("VolumeInitializationRate", _int32(ebs.get("volumeInitializationRate"))),
        ("VolumeSize", _quantity(ebs.get("volumeSize"))),
        ("VolumeType", _str(ebs.get("volumeType"))),
    ]


def _block_device_mapping(mapping: JSON) -> int:
    ebs = mapping.get("ebs")
    return hs.struct_of(
        "BlockDeviceMapping",
        [
            ("DeviceName", _str(mapping.get("deviceName"))),
            ("EBS", _struct("BlockDevice", ebs, _block_device(_obj(ebs)))),
            ("RootVolume", hs.boolean(True) if mapping.get("rootVolume") else None),
        ],
    )


def _network_interface(nic: JSON) -> int:
    return hs.struct_of(
        "NetworkInterface",
        [
            ("NetworkCardIndex", _plain_int32(nic.get("networkCardIndex"))),
            ("DeviceIndex", _plain_int32(nic.get("deviceIndex"))),
            ("InterfaceType", _plain_str(nic.get("interfaceType"))),
        ],
    )


def _spec(spec: JSON) -> int:
    placement = spec.get("placementGroupSelector")
    metadata = spec.get("metadataOptions")
    enclave = spec.get("enclaveOptions")
    tracking = spec.get("connectionTracking")
    cpu = spec.get("cpuOptions")
    return hs.struct_of(
        "EC2NodeClassSpec",
        [
            (
                "PlacementGroupSelector",
                _struct(
                    "PlacementGroupSelector",
                    placement,
                    [
                        ("Name", _str(_obj(placement).get("name"))),
                        ("ID", _str(_obj(placement).get("id"))),
                    ],
                ),
            ),
            ("AssociatePublicIPAddress", _bool(spec.get("associatePublicIPAddress"))),
            ("UserData", _str(spec.get("userData"))),
            ("Role", _plain_str(spec.get("role"))),
            ("InstanceProfile", _str(spec.get("instanceProfile"))),
            ("Tags", _string_map(spec.get("tags"))),
            ("BlockDeviceMappings", _list(spec.get("blockDeviceMappings"), _block_device_mapping)),
            ("InstanceStorePolicy", _str(spec.get("instanceStorePolicy"))),
            ("NetworkInterfaces", _list(spec.get("networkInterfaces"), _network_interface)),
            ("DetailedMonitoring", _bool(spec.get("detailedMonitoring"))),
            (
                "MetadataOptions",
                _struct(
                    "MetadataOptions",
                    metadata,
                    [
                        ("HTTPEndpoint", _str(_obj(metadata).get("httpEndpoint"))),
                        ("HTTPProtocolIPv6", _str(_obj(metadata).get("httpProtocolIPv6"))),
                        (
                            "HTTPPutResponseHopLimit",
                            _int64(_obj(metadata).get("httpPutResponseHopLimit")),
                        ),
                        ("HTTPTokens", _str(_obj(metadata).get("httpTokens"))),
                    ],
                ),
            ),
            (
                "EnclaveOptions",
                _struct(
                    "EnclaveOptions",
                    enclave,
                    [("Enabled", hs.boolean(True) if _obj(enclave).get("enabled") else None)],
                ),
            ),
            (
                "ConnectionTracking",
                _struct(
                    "ConnectionTracking",
                    tracking,
                    [
                        (
                            "TCPEstablishedTimeout",
                            _int32(_obj(tracking).get("tcpEstablishedTimeout")),
                        ),
                        ("UDPStreamTimeout", _int32(_obj(tracking).get("udpStreamTimeout"))),
                        ("UDPTimeout", _int32(_obj(tracking).get("udpTimeout"))),
                    ],
                ),
            ),
            ("Context", _str(spec.get("context"))),
            (
                "CPUOptions",
                _struct(
                    "CPUOptions",
                    cpu,
                    [("NestedVirtualization", _str(_obj(cpu).get("nestedVirtualization")))],
                ),
            ),
        ],
    )


def ami_family(spec: JSON) -> str:
    """`EC2NodeClass.AMIFamily()`: the field, else the alias term's family, else `Custom`."""
    family = spec.get("amiFamily")
    if family is not None:
        return str(family)
    for term in spec.get("amiSelectorTerms") or []:
        alias = _obj(term).get("alias")
        if alias:
            return _ALIAS_FAMILIES.get(str(alias).split("@", 1)[0], "Custom")
    return "Custom"


def kubelet_json(kubelet: Any) -> str:
    """The kubelet block as Go marshals the open map: `null` when empty, else sorted and compact."""
    if not isinstance(kubelet, Mapping) or not kubelet:
        return "null"
    text = json.dumps(kubelet, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.translate(_GO_ESCAPES)


def _spec_of(nodeclass: EC2NodeClass | JSON) -> JSON:
    if isinstance(nodeclass, EC2NodeClass):
        return nodeclass.spec.to_dict()
    return _obj(nodeclass.get("spec"))


def nodeclass_hash(nodeclass: EC2NodeClass | JSON, ca_bundle: str | None = None) -> str:
    """Karpenter's `EC2NodeClass.Hash(caBundle)` in decimal."""
    spec = _spec_of(nodeclass)
    return str(
        hs.set_of(
            [
                _spec(spec),
                hs.string(ami_family(spec)),
                hs.string(ca_bundle or ""),
                hs.string(kubelet_json(spec.get("kubelet"))),
            ]
        )
    )


def hash_annotations(
    nodeclass: EC2NodeClass | JSON, ca_bundle: str | None = None
) -> dict[str, str]:
    return {
        ANNOTATION_EC2NODECLASS_HASH: nodeclass_hash(nodeclass, ca_bundle),
        ANNOTATION_EC2NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION,
    }
