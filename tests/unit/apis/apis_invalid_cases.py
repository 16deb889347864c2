"""Invalid manifests, each with the field path and message both the apiserver and karpy's Python
validation must report. One table, run against both (`tests/unit/apis/test_validation.py` and
`tests/integration/test_crds.py`), so the two sides cannot drift apart.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests import kit

Obj = dict[str, Any]


AMD64 = ({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},)
EC2 = {"kind": "EC2NodeClass", "group": "karpenter.k8s.aws"}


def nodepool(name: str = "np") -> Obj:
    return kit.nodepool(name, requirements=AMD64, **EC2)


def nodeclaim(name: str = "nc") -> Obj:
    return kit.nodeclaim(
        name,
        pool=None,
        nodeclass="x",
        requirements=AMD64,
        requests={"cpu": "1", "memory": "1Gi"},
        **EC2,
    )


def ec2nodeclass(name: str = "ec2") -> Obj:
    return kit.ec2nodeclass(name)


def aksnodeclass(name: str = "aks") -> Obj:
    return {
        "apiVersion": "karpenter.azure.com/v1beta1",
        "kind": "AKSNodeClass",
        "metadata": {"name": name},
        "spec": {"imageFamily": "Ubuntu2204", "osDiskSizeGB": 128},
    }


def kwoknodeclass(name: str = "kwok") -> Obj:
    return kit.kwok_nodeclass(name, delay="5s")


def schedulingconfig(name: str = "sc") -> Obj:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "SchedulingConfig",
        "metadata": {"name": name},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "x"},
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
        },
    }


def nodeoverlay(name: str = "no") -> Obj:
    return kit.nodeoverlay(
        name,
        requirements=[
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}
        ],
        priceAdjustment="-10%",
        weight=10,
    )


def capacitybuffer(name: str = "cb") -> Obj:
    return kit.capacitybuffer(name, podTemplateRef={"name": "chunk"}, replicas=1)


BASES: dict[str, Callable[[str], Obj]] = {
    "NodePool": nodepool,
    "NodeClaim": nodeclaim,
    "EC2NodeClass": ec2nodeclass,
    "AKSNodeClass": aksnodeclass,
    "KWOKNodeClass": kwoknodeclass,
    "SchedulingConfig": schedulingconfig,
    "NodeOverlay": nodeoverlay,
    "CapacityBuffer": capacitybuffer,
}

Mutation = Callable[[Obj], None]


@dataclass(frozen=True)
class Case:
    """An invalid object (or an invalid update of a valid one) and the error it must cause.

    `path` is the field path the error is reported at (None when the message itself names the
    field, as for unknown fields); `message` is a fragment of that error's text.
    """

    id: str
    kind: str
    mutate: Mutation
    path: str | None
    message: str
    update: bool = False
    before: Mutation | None = None
    """Applied to the base object first (e.g. to store a static NodePool and update it)."""

    @property
    def name(self) -> str:
        return "inv-" + self.id

    def objects(self) -> tuple[Obj | None, Obj]:
        """(stored object for an update or None, the object to submit)."""
        base = BASES[self.kind](self.name)
        if self.before is not None:
            self.before(base)
        changed = copy.deepcopy(base)
        self.mutate(changed)
        return (base if self.update else None), changed


def matches(case: Case, lines: list[str]) -> bool:
    """Some error line is at the case's path and carries its message."""
    for line in lines:
        if case.path is None and case.message in line:
            return True
        if case.path is not None and line.startswith(f"{case.path}: ") and case.message in line:
            return True
    return False


def _tpl(o: Obj) -> Obj:
    spec: Obj = o["spec"]["template"]["spec"]
    return spec


def _set_req(**fields: Any) -> Mutation:
    def mutate(o: Obj) -> None:
        _tpl(o)["requirements"] = [fields]

    return mutate


def _set(path: str, value: Any) -> Mutation:
    """Set a dotted path (creating maps on the way); a value of DELETE removes the key."""

    def mutate(o: Obj) -> None:
        parts = path.split(".")
        node = o
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        if value is DELETE:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = copy.deepcopy(value)

    return mutate


DELETE = object()

TPL = "spec.template.spec"
REQS = f"{TPL}.requirements"
DOMAIN = 'label domain "karpenter.sh" is restricted'
HOSTNAME = 'label "kubernetes.io/hostname" is restricted'


def _ref(**ref: Any) -> Mutation:
    def mutate(o: Obj) -> None:
        _tpl(o)["nodeClassRef"] = ref

    return mutate


def _labels(**labels: str) -> Mutation:
    def mutate(o: Obj) -> None:
        o["spec"]["template"]["metadata"] = {"labels": labels}

    return mutate


def _budget(**budget: Any) -> Mutation:
    def mutate(o: Obj) -> None:
        o["spec"]["disruption"]["budgets"] = [budget]

    return mutate


def _many_requirements(o: Obj) -> None:
    _tpl(o)["requirements"] = [
        {"key": f"example.com/k{i}", "operator": "Exists"} for i in range(101)
    ]


def _ec2(path: str, value: Any) -> Mutation:
    return _set(f"spec.{path}", value)


NODEPOOL_CASES = [
    Case(
        "unknown-operator",
        "NodePool",
        _set_req(key="kubernetes.io/arch", operator="Foo", values=["amd64"]),
        f"{REQS}[0].operator",
        'Unsupported value: "Foo"',
    ),
    Case(
        "gt-two-values",
        "NodePool",
        _set_req(key="example.com/gen", operator="Gt", values=["2", "3"]),
        REQS,
        "must have a single positive integer value",
    ),
    Case(
        "gt-not-integer",
        "NodePool",
        _set_req(key="example.com/gen", operator="Gt", values=["two"]),
        REQS,
        "must have a single positive integer value",
    ),
    Case(
        "lte-no-values",
        "NodePool",
        _set_req(key="example.com/gen", operator="Lte", values=[]),
        REQS,
        "must have a single positive integer value",
    ),
    Case(
        "gte-negative",
        "NodePool",
        _set_req(key="example.com/gen", operator="Gte", values=["-1"]),
        f"{REQS}[0].values[0]",
        "should match",
    ),
    Case(
        "in-without-values",
        "NodePool",
        _set_req(key="kubernetes.io/arch", operator="In"),
        REQS,
        "requirements with operator 'In' must have a value defined",
    ),
    Case(
        "in-empty-values",
        "NodePool",
        _set_req(key="kubernetes.io/arch", operator="In", values=[]),
        REQS,
        "requirements with operator 'In' must have a value defined",
    ),
    Case(
        "karpenter-sh-key",
        "NodePool",
        _set_req(key="karpenter.sh/custom", operator="Exists"),
        f"{REQS}[0].key",
        DOMAIN,
    ),
    Case(
        "karpenter-sh-subdomain-key",
        "NodePool",
        _set_req(key="x.karpenter.sh/custom", operator="Exists"),
        f"{REQS}[0].key",
        DOMAIN,
    ),
    Case(
        "nodepool-key",
        "NodePool",
        _set_req(key="karpenter.sh/nodepool", operator="In", values=["a"]),
        f"{REQS}[0].key",
        'label "karpenter.sh/nodepool" is restricted',
    ),
    Case(
        "hostname-requirement",
        "NodePool",
        _set_req(key="kubernetes.io/hostname", operator="In", values=["node-1"]),
        f"{REQS}[0].key",
        HOSTNAME,
    ),
    Case(
        "malformed-key",
        "NodePool",
        _set_req(key="bad key!", operator="Exists"),
        f"{REQS}[0].key",
        "should match",
    ),
    Case(
        "value-too-long",
        "NodePool",
        _set_req(key="example.com/k", operator="In", values=["v" * 64]),
        f"{REQS}[0].values[0]",
        "Too long: may not be more than 63",
    ),
    Case(
        "min-values-above-values",
        "NodePool",
        _set_req(key="kubernetes.io/arch", operator="In", values=["amd64"], minValues=2),
        REQS,
        "requirements with 'minValues' must have at least that many values",
    ),
    Case(
        "min-values-51",
        "NodePool",
        _set_req(key="kubernetes.io/arch", operator="Exists", minValues=51),
        f"{REQS}[0].minValues",
        "less than or equal to 50",
    ),
    Case(
        "too-many-requirements", "NodePool", _many_requirements, REQS, "must have at most 100 items"
    ),
    Case(
        "requirements-missing",
        "NodePool",
        _set(f"{TPL}.requirements", DELETE),
        REQS,
        "Required value",
    ),
    Case(
        "template-label-karpenter-sh",
        "NodePool",
        _labels(**{"karpenter.sh/team": "a"}),
        "spec.template.metadata.labels",
        DOMAIN,
    ),
    Case(
        "template-label-hostname",
        "NodePool",
        _labels(**{"kubernetes.io/hostname": "a"}),
        "spec.template.metadata.labels",
        HOSTNAME,
    ),
    Case(
        "template-label-value",
        "NodePool",
        _labels(team="not valid!"),
        "spec.template.metadata.labels.team",
        "should match",
    ),
    Case(
        "budget-schedule-without-duration",
        "NodePool",
        _budget(nodes="1", schedule="@daily"),
        "spec.disruption.budgets",
        "'schedule' must be set with 'duration'",
    ),
    Case(
        "budget-duration-without-schedule",
        "NodePool",
        _budget(nodes="1", duration="1h"),
        "spec.disruption.budgets",
        "'schedule' must be set with 'duration'",
    ),
    Case(
        "budget-nodes-110-percent",
        "NodePool",
        _budget(nodes="110%"),
        "spec.disruption.budgets[0].nodes",
        "should match",
    ),
    Case(
        "budget-duration-seconds",
        "NodePool",
        _budget(nodes="1", schedule="@daily", duration="30s"),
        "spec.disruption.budgets[0].duration",
        "should match",
    ),
    Case(
        "budget-unknown-reason",
        "NodePool",
        _budget(nodes="1", reasons=["Expired"]),
        "spec.disruption.budgets[0].reasons[0]",
        'Unsupported value: "Expired"',
    ),
    Case(
        "consolidate-after-malformed",
        "NodePool",
        _set("spec.disruption.consolidateAfter", "30x"),
        "spec.disruption.consolidateAfter",
        "should match",
    ),
    Case(
        "consolidate-after-missing",
        "NodePool",
        _set("spec.disruption.consolidateAfter", DELETE),
        "spec.disruption.consolidateAfter",
        "Required value",
    ),
    Case(
        "expire-after-days",
        "NodePool",
        _set(f"{TPL}.expireAfter", "30d"),
        f"{TPL}.expireAfter",
        "should match",
    ),
    Case(
        "termination-grace-never",
        "NodePool",
        _set(f"{TPL}.terminationGracePeriod", "Never"),
        f"{TPL}.terminationGracePeriod",
        "should match",
    ),
    Case(
        "v1beta1-consolidation-policy",
        "NodePool",
        _set("spec.disruption.consolidationPolicy", "WhenUnderutilized"),
        "spec.disruption.consolidationPolicy",
        'Unsupported value: "WhenUnderutilized"',
    ),
    Case(
        "weight-0",
        "NodePool",
        _set("spec.weight", 0),
        "spec.weight",
        "should be greater than or equal to 1",
    ),
    Case(
        "weight-101",
        "NodePool",
        _set("spec.weight", 101),
        "spec.weight",
        "should be less than or equal to 100",
    ),
    Case(
        "weight-string",
        "NodePool",
        _set("spec.weight", "5"),
        "spec.weight",
        "must be of type integer",
    ),
    Case(
        "taint-effect",
        "NodePool",
        _set(f"{TPL}.taints", [{"key": "a", "effect": "Never"}]),
        f"{TPL}.taints[0].effect",
        'Unsupported value: "Never"',
    ),
    Case(
        "startup-taint-empty-key",
        "NodePool",
        _set(f"{TPL}.startupTaints", [{"key": "", "effect": "NoSchedule"}]),
        f"{TPL}.startupTaints[0].key",
        "should be at least 1 chars long",
    ),
    Case(
        "limits-not-quantity",
        "NodePool",
        _set("spec.limits", {"cpu": "lots"}),
        "spec.limits.cpu",
        "should match",
    ),
    Case(
        "node-class-ref-missing",
        "NodePool",
        _set(f"{TPL}.nodeClassRef", DELETE),
        f"{TPL}.nodeClassRef",
        "Required value",
    ),
    Case(
        "node-class-ref-no-group",
        "NodePool",
        _ref(kind="EC2NodeClass", name="default"),
        f"{TPL}.nodeClassRef",
        "nodeClassRef must set 'group' (or the legacy 'apiVersion')",
    ),
    Case(
        "node-class-ref-empty-kind",
        "NodePool",
        _ref(group="karpenter.k8s.aws", kind="", name="default"),
        f"{TPL}.nodeClassRef.kind",
        "kind may not be empty",
    ),
    Case(
        "node-class-ref-group-slash",
        "NodePool",
        _ref(group="karpenter.k8s.aws/v1", kind="EC2NodeClass", name="default"),
        f"{TPL}.nodeClassRef.group",
        "should match",
    ),
    Case(
        "node-class-ref-api-version-mismatch",
        "NodePool",
        _ref(
            group="karpenter.k8s.aws",
            apiVersion="karpenter.kwok.sh/v1alpha1",
            kind="EC2NodeClass",
            name="default",
        ),
        f"{TPL}.nodeClassRef",
        "nodeClassRef.apiVersion must be in nodeClassRef.group",
    ),
    Case(
        "static-with-cpu-limit",
        "NodePool",
        _set("spec", {**nodepool()["spec"], "replicas": 2, "limits": {"cpu": "10"}}),
        "spec",
        "only 'limits.nodes' is supported on static",
    ),
    Case(
        "static-with-nodes-and-cpu-limits",
        "NodePool",
        _set("spec", {**nodepool()["spec"], "replicas": 2, "limits": {"nodes": "5", "cpu": "10"}}),
        "spec",
        "only 'limits.nodes' is supported on static",
    ),
    Case(
        "static-with-weight",
        "NodePool",
        _set("spec", {**nodepool()["spec"], "replicas": 2, "weight": 10}),
        "spec",
        "'weight' is not supported on static NodePools",
    ),
    Case(
        "replicas-negative",
        "NodePool",
        _set("spec.replicas", -1),
        "spec.replicas",
        "should be greater than or equal to 0",
    ),
    Case(
        "unknown-field",
        "NodePool",
        _set("spec.consolidation", {"enabled": True}),
        None,
        'unknown field "spec.consolidation"',
    ),
    # updates of a stored NodePool
    Case(
        "change-node-class-kind",
        "NodePool",
        _ref(group="karpenter.k8s.aws", kind="OtherNodeClass", name="default"),
        f"{TPL}.nodeClassRef",
        "nodeClassRef.kind is immutable",
        update=True,
    ),
    Case(
        "change-node-class-group",
        "NodePool",
        _ref(group="karpenter.kwok.sh", kind="EC2NodeClass", name="default"),
        f"{TPL}.nodeClassRef",
        "nodeClassRef.group is immutable",
        update=True,
    ),
    Case(
        "change-node-class-group-legacy",
        "NodePool",
        _ref(apiVersion="karpenter.kwok.sh/v1", kind="EC2NodeClass", name="default"),
        f"{TPL}.nodeClassRef",
        "nodeClassRef.group is immutable",
        update=True,
    ),
    Case(
        "dynamic-to-static",
        "NodePool",
        _set("spec.replicas", 3),
        "spec",
        "Cannot transition NodePool between static",
        update=True,
    ),
    Case(
        "static-to-dynamic",
        "NodePool",
        _set("spec.replicas", DELETE),
        "spec",
        "Cannot transition NodePool between static",
        update=True,
        before=_set("spec.replicas", 3),
    ),
    Case(
        "static-add-weight",
        "NodePool",
        _set("spec.weight", 5),
        "spec",
        "'weight' is not supported on static NodePools",
        update=True,
        before=_set("spec.replicas", 3),
    ),
    Case(
        "static-add-memory-limit",
        "NodePool",
        _set("spec.limits", {"nodes": "5", "memory": "10Gi"}),
        "spec",
        "only 'limits.nodes' is supported on static",
        update=True,
        before=_set("spec.replicas", 3),
    ),
]

NODECLAIM_CASES = [
    Case(
        "nodeclaim-change-requirements",
        "NodeClaim",
        _set(
            "spec.requirements",
            [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
        ),
        "spec",
        "spec is immutable",
        update=True,
    ),
    Case(
        "nodeclaim-change-expire-after",
        "NodeClaim",
        _set("spec.expireAfter", "1h"),
        "spec",
        "spec is immutable",
        update=True,
    ),
    Case(
        "nodeclaim-change-requests",
        "NodeClaim",
        _set("spec.resources.requests.cpu", "2"),
        "spec",
        "spec is immutable",
        update=True,
    ),
    Case(
        "nodeclaim-hostname",
        "NodeClaim",
        _set(
            "spec.requirements",
            [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}],
        ),
        "spec.requirements[0].key",
        HOSTNAME,
    ),
    Case(
        "nodeclaim-karpenter-sh-key",
        "NodeClaim",
        _set("spec.requirements", [{"key": "karpenter.sh/other", "operator": "Exists"}]),
        "spec.requirements[0].key",
        DOMAIN,
    ),
    Case(
        "nodeclaim-in-without-values",
        "NodeClaim",
        _set("spec.requirements", [{"key": "kubernetes.io/arch", "operator": "In"}]),
        "spec.requirements",
        "requirements with operator 'In' must have a value defined",
    ),
]

EC2_CASES = [
    Case(
        "role-and-instance-profile",
        "EC2NodeClass",
        _ec2("instanceProfile", "profile"),
        "spec",
        "must specify exactly one of ['role', 'instanceProfile']",
    ),
    Case(
        "neither-role-nor-instance-profile",
        "EC2NodeClass",
        _ec2("role", DELETE),
        "spec",
        "must specify exactly one of ['role', 'instanceProfile']",
    ),
    Case("empty-role", "EC2NodeClass", _ec2("role", ""), "spec.role", "role cannot be empty"),
    Case(
        "alias-with-other-term",
        "EC2NodeClass",
        _ec2("amiSelectorTerms", [{"alias": "al2023@latest"}, {"id": "ami-0123456789"}]),
        "spec.amiSelectorTerms",
        "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
    ),
    Case(
        "alias-with-other-field",
        "EC2NodeClass",
        _ec2("amiSelectorTerms", [{"alias": "al2023@latest", "owner": "amazon"}]),
        "spec.amiSelectorTerms",
        "'alias' is mutually exclusive, cannot be set with a combination of other fields",
    ),
    Case(
        "alias-malformed",
        "EC2NodeClass",
        _ec2("amiSelectorTerms", [{"alias": "al2023"}]),
        "spec.amiSelectorTerms[0].alias",
        "'alias' is improperly formatted",
    ),
    Case(
        "alias-unknown-family",
        "EC2NodeClass",
        _ec2("amiSelectorTerms", [{"alias": "ubuntu@latest"}]),
        "spec.amiSelectorTerms[0].alias",
        "family is not supported",
    ),
    Case(
        "alias-windows-pinned",
        "EC2NodeClass",
        _ec2("amiSelectorTerms", [{"alias": "windows2022@v20240101"}]),
        "spec.amiSelectorTerms[0].alias",
        "windows families may only specify version 'latest'",
    ),
    Case(
        "alias-family-mismatch",
        "EC2NodeClass",
        _ec2("amiFamily", "AL2"),
        "spec",
        "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias",
    ),
    Case(
        "no-alias-no-family",
        "EC2NodeClass",
        _ec2("amiSelectorTerms", [{"id": "ami-0123456789"}]),
        "spec",
        "must specify amiFamily if amiSelectorTerms does not contain an alias",
    ),
    Case(
        "ami-family-unknown",
        "EC2NodeClass",
        _ec2("amiFamily", "Ubuntu"),
        "spec.amiFamily",
        'Unsupported value: "Ubuntu"',
    ),
    Case(
        "no-ami-terms",
        "EC2NodeClass",
        _ec2("amiSelectorTerms", []),
        "spec.amiSelectorTerms",
        "should have at least 1 items",
    ),
    Case(
        "subnet-terms-empty",
        "EC2NodeClass",
        _ec2("subnetSelectorTerms", []),
        "spec.subnetSelectorTerms",
        "subnetSelectorTerms cannot be empty",
    ),
    Case(
        "subnet-term-empty",
        "EC2NodeClass",
        _ec2("subnetSelectorTerms", [{}]),
        "spec.subnetSelectorTerms",
        "expected at least one, got none, ['tags', 'id']",
    ),
    Case(
        "subnet-id-and-tags",
        "EC2NodeClass",
        _ec2("subnetSelectorTerms", [{"id": "subnet-123", "tags": {"a": "b"}}]),
        "spec.subnetSelectorTerms",
        "'id' is mutually exclusive",
    ),
    Case(
        "subnet-id-malformed",
        "EC2NodeClass",
        _ec2("subnetSelectorTerms", [{"id": "vpc-1"}]),
        "spec.subnetSelectorTerms[0].id",
        "should match",
    ),
    Case(
        "security-group-id-and-name",
        "EC2NodeClass",
        _ec2("securityGroupSelectorTerms", [{"id": "sg-123", "name": "web"}]),
        "spec.securityGroupSelectorTerms",
        "'id' is mutually exclusive",
    ),
    Case(
        "selector-empty-tag-value",
        "EC2NodeClass",
        _ec2("subnetSelectorTerms", [{"tags": {"karpenter.sh/discovery": ""}}]),
        "spec.subnetSelectorTerms[0].tags",
        "empty tag keys or values aren't supported",
    ),
    Case(
        "restricted-cluster-tag",
        "EC2NodeClass",
        _ec2("tags", {"kubernetes.io/cluster/prod": "owned"}),
        "spec.tags",
        "tag contains a restricted tag matching kubernetes.io/cluster/",
    ),
    Case(
        "restricted-nodepool-tag",
        "EC2NodeClass",
        _ec2("tags", {"karpenter.sh/nodepool": "a"}),
        "spec.tags",
        "tag contains a restricted tag matching karpenter.sh/nodepool",
    ),
    Case(
        "hop-limit-65",
        "EC2NodeClass",
        _ec2("metadataOptions", {"httpPutResponseHopLimit": 65}),
        "spec.metadataOptions.httpPutResponseHopLimit",
        "less than or equal to 64",
    ),
    Case(
        "http-tokens-unknown",
        "EC2NodeClass",
        _ec2("metadataOptions", {"httpTokens": "maybe"}),
        "spec.metadataOptions.httpTokens",
        'Unsupported value: "maybe"',
    ),
    Case(
        "two-root-volumes",
        "EC2NodeClass",
        _ec2(
            "blockDeviceMappings",
            [
                {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
                {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
            ],
        ),
        "spec.blockDeviceMappings",
        "must have only one blockDeviceMappings with rootVolume",
    ),
    Case(
        "ebs-without-size",
        "EC2NodeClass",
        _ec2("blockDeviceMappings", [{"deviceName": "/dev/xvda", "ebs": {"volumeType": "gp3"}}]),
        "spec.blockDeviceMappings[0].ebs",
        "snapshotID or volumeSize must be defined",
    ),
    Case(
        "ebs-size-mebibytes",
        "EC2NodeClass",
        _ec2("blockDeviceMappings", [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Mi"}}]),
        "spec.blockDeviceMappings[0].ebs.volumeSize",
        "should match",
    ),
    Case(
        "kubelet-image-gc",
        "EC2NodeClass",
        _ec2("kubelet", {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}),
        "spec.kubelet",
        "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
    ),
    Case(
        "kubelet-reserved-key",
        "EC2NodeClass",
        _ec2("kubelet", {"kubeReserved": {"gpu": "1"}}),
        "spec.kubelet.kubeReserved",
        "valid keys for kubeReserved are",
    ),
    Case(
        "kubelet-negative-reserved",
        "EC2NodeClass",
        _ec2("kubelet", {"systemReserved": {"cpu": "-1"}}),
        "spec.kubelet.systemReserved",
        "systemReserved value cannot be a negative resource quantity",
    ),
    Case(
        "kubelet-soft-without-grace",
        "EC2NodeClass",
        _ec2("kubelet", {"evictionSoft": {"memory.available": "5%"}}),
        "spec.kubelet",
        "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
    ),
    Case(
        "kubelet-max-pods-negative",
        "EC2NodeClass",
        _ec2("kubelet", {"maxPods": -1}),
        "spec.kubelet.maxPods",
        "should be greater than or equal to 0",
    ),
    Case(
        "network-interfaces-no-primary",
        "EC2NodeClass",
        _ec2(
            "networkInterfaces",
            [{"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}],
        ),
        "spec.networkInterfaces",
        "must include a primary interface",
    ),
    Case(
        "network-interfaces-duplicate",
        "EC2NodeClass",
        _ec2(
            "networkInterfaces",
            [
                {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            ],
        ),
        "spec.networkInterfaces",
        "must not repeat a (networkCardIndex, deviceIndex) pair",
    ),
    Case(
        "connection-tracking-empty",
        "EC2NodeClass",
        _ec2("connectionTracking", {}),
        "spec.connectionTracking",
        "connectionTracking must set at least one of",
    ),
    Case(
        "connection-tracking-udp-timeout",
        "EC2NodeClass",
        _ec2("connectionTracking", {"udpTimeout": 10}),
        "spec.connectionTracking.udpTimeout",
        "should be greater than or equal to 30",
    ),
    Case(
        "placement-group-name-and-id",
        "EC2NodeClass",
        _ec2("placementGroupSelector", {"name": "pg", "id": "pg-0123"}),
        "spec.placementGroupSelector",
        "expected exactly one of ['name', 'id']",
    ),
    Case(
        "capacity-reservation-id-and-owner",
        "EC2NodeClass",
        _ec2("capacityReservationSelectorTerms", [{"id": "cr-0123", "ownerID": "012345678901"}]),
        "spec.capacityReservationSelectorTerms",
        "'id' is mutually exclusive",
    ),
]

KWOK_CASES = [
    Case(
        "kwok-delay-malformed",
        "KWOKNodeClass",
        _set("spec.nodeRegistrationDelay", "5 sec"),
        "spec.nodeRegistrationDelay",
        "should match",
    ),
    Case(
        "kwok-reserved-key",
        "KWOKNodeClass",
        _set("spec.reservedResources", {"gpu": "1"}),
        "spec.reservedResources",
        "valid keys for kubeReserved are",
    ),
    Case(
        "kwok-max-pods-negative",
        "KWOKNodeClass",
        _set("spec.maxPods", -1),
        "spec.maxPods",
        "should be greater than or equal to 0",
    ),
]


def _sc_req(**fields: Any) -> Mutation:
    def mutate(o: Obj) -> None:
        o["spec"]["requirements"] = [fields]

    return mutate


def _sc_many_requirements(o: Obj) -> None:
    o["spec"]["requirements"] = [
        {"key": f"example.com/k{i}", "operator": "Exists"} for i in range(101)
    ]


SC_REQS = "spec.requirements"
# SchedulingConfig requirements follow the NodePool rules (karpy's extension).
SCHEDULINGCONFIG_CASES = [
    Case(
        "sc-unknown-operator",
        "SchedulingConfig",
        _sc_req(key="kubernetes.io/arch", operator="Foo", values=["amd64"]),
        f"{SC_REQS}[0].operator",
        'Unsupported value: "Foo"',
    ),
    Case(
        "sc-in-empty-values",
        "SchedulingConfig",
        _sc_req(key="kubernetes.io/arch", operator="In", values=[]),
        SC_REQS,
        "requirements with operator 'In' must have a value defined",
    ),
    Case(
        "sc-gt-two-values",
        "SchedulingConfig",
        _sc_req(key="example.com/gen", operator="Gt", values=["2", "3"]),
        SC_REQS,
        "must have a single positive integer value",
    ),
    Case(
        "sc-karpenter-sh-key",
        "SchedulingConfig",
        _sc_req(key="karpenter.sh/custom", operator="Exists"),
        f"{SC_REQS}[0].key",
        DOMAIN,
    ),
    Case(
        "sc-nodepool-key",
        "SchedulingConfig",
        _sc_req(key="karpenter.sh/nodepool", operator="In", values=["a"]),
        f"{SC_REQS}[0].key",
        'label "karpenter.sh/nodepool" is restricted',
    ),
    Case(
        "sc-hostname-key",
        "SchedulingConfig",
        _sc_req(key="kubernetes.io/hostname", operator="In", values=["node-1"]),
        f"{SC_REQS}[0].key",
        HOSTNAME,
    ),
    Case(
        "sc-min-values-above-values",
        "SchedulingConfig",
        _sc_req(key="kubernetes.io/arch", operator="In", values=["amd64"], minValues=2),
        SC_REQS,
        "requirements with 'minValues' must have at least that many values",
    ),
    Case(
        "sc-too-many-requirements",
        "SchedulingConfig",
        _sc_many_requirements,
        SC_REQS,
        "must have at most 100 items",
    ),
    Case(
        "sc-nodeclassref-without-group",
        "SchedulingConfig",
        _set("spec.nodeClassRef", {"kind": "EC2NodeClass", "name": "x"}),
        "spec.nodeClassRef",
        "nodeClassRef must set 'group'",
    ),
    Case(
        "sc-batch-idle-malformed",
        "SchedulingConfig",
        _set("spec.batchIdleDuration", "1 second"),
        "spec.batchIdleDuration",
        "should match",
    ),
    Case(
        "sc-preference-policy",
        "SchedulingConfig",
        _set("spec.preferencePolicy", "Sometimes"),
        "spec.preferencePolicy",
        'Unsupported value: "Sometimes"',
    ),
    Case(
        "sc-spread-skew-zero",
        "SchedulingConfig",
        _set(
            "spec.topologySpreadConstraints",
            [{"maxSkew": 0, "topologyKey": "topology.kubernetes.io/zone"}],
        ),
        "spec.topologySpreadConstraints[0].maxSkew",
        "should be greater than or equal to 1",
    ),
]

NO_REQS = "spec.requirements"
# NodeOverlay (karpenter.sh/v1alpha1): Karpenter's CRD rules.
NODEOVERLAY_CASES = [
    Case(
        "no-in-empty-values",
        "NodeOverlay",
        _sc_req(key="kubernetes.io/arch", operator="In", values=[]),
        NO_REQS,
        "requirements with operator 'In' must have a value defined",
    ),
    Case(
        "no-notin-empty-values",
        "NodeOverlay",
        _sc_req(key="kubernetes.io/arch", operator="NotIn", values=[]),
        NO_REQS,
        "requirements with operator 'NotIn' must have a value defined",
    ),
    Case(
        "no-gte-negative",
        "NodeOverlay",
        _sc_req(key="example.com/gen", operator="Gte", values=["-1"]),
        NO_REQS,
        "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer",
    ),
    Case(
        "no-unknown-operator",
        "NodeOverlay",
        _sc_req(key="kubernetes.io/arch", operator="Foo", values=["amd64"]),
        f"{NO_REQS}[0].operator",
        'Unsupported value: "Foo"',
    ),
    Case(
        "no-requirements-missing",
        "NodeOverlay",
        _set("spec.requirements", DELETE),
        NO_REQS,
        "Required value",
    ),
    Case(
        "no-price-and-adjustment",
        "NodeOverlay",
        _set("spec.price", "1.5"),
        "spec",
        "cannot set both 'price' and 'priceAdjustment'",
    ),
    Case(
        "no-adjustment-unsigned",
        "NodeOverlay",
        _set("spec.priceAdjustment", "10%"),
        "spec.priceAdjustment",
        "should match",
    ),
    Case(
        "no-adjustment-below-minus-100",
        "NodeOverlay",
        _set("spec.priceAdjustment", "-150%"),
        "spec.priceAdjustment",
        "should match",
    ),
    Case(
        "no-price-negative",
        "NodeOverlay",
        _set("spec.price", "-1"),
        "spec.price",
        "should match",
    ),
    Case(
        "no-capacity-cpu",
        "NodeOverlay",
        _set("spec.capacity", {"cpu": "2", "example.com/fuse": "1"}),
        "spec.capacity",
        "invalid resource restricted",
    ),
    Case(
        "no-weight-zero",
        "NodeOverlay",
        _set("spec.weight", 0),
        "spec.weight",
        "should be greater than or equal to 1",
    ),
    Case(
        "no-weight-too-high",
        "NodeOverlay",
        _set("spec.weight", 10001),
        "spec.weight",
        "should be less than or equal to 10000",
    ),
]

# CapacityBuffer (autoscaling.x-k8s.io/v1beta1): upstream's CRD rules, messages as upstream.
CAPACITYBUFFER_CASES = [
    Case(
        "cb-template-without-count",
        "CapacityBuffer",
        _set("spec.replicas", DELETE),
        "spec",
        "If X is set, replicas or limits must also be set",
    ),
    Case(
        "cb-both-refs",
        "CapacityBuffer",
        _set("spec.scalableRef", {"apiGroup": "apps", "kind": "Deployment", "name": "web"}),
        "spec",
        "You must define either PodTemplateRef or ScalableRef, but not both",
    ),
    Case(
        "cb-negative-replicas",
        "CapacityBuffer",
        _set("spec.replicas", -1),
        "spec.replicas",
        "should be greater than or equal to 0",
    ),
    Case(
        "cb-negative-percentage",
        "CapacityBuffer",
        _set("spec.percentage", -5),
        "spec.percentage",
        "should be greater than or equal to 0",
    ),
    Case(
        "cb-empty-template-name",
        "CapacityBuffer",
        _set("spec.podTemplateRef.name", ""),
        "spec.podTemplateRef.name",
        "should be at least 1 chars long",
    ),
]


def _dns_zone(zone: str, destination: str, **changes: Any) -> Obj:
    override: Obj = {
        "zone": zone,
        "queryLogging": "Error",
        "protocol": "PreferUDP",
        "forwardDestination": destination,
        "forwardPolicy": "Sequential",
        "maxConcurrent": 1000,
        "cacheDuration": "1h",
        "serveStaleDuration": "1h",
        "serveStale": "Verify",
    }
    override.update(changes)
    return override


def _local_dns(vnet: list[Obj] | None = None, kube: list[Obj] | None = None) -> Obj:
    return {
        "mode": "Required",
        "vnetDNSOverrides": vnet
        if vnet is not None
        else [_dns_zone(".", "VnetDNS"), _dns_zone("cluster.local", "ClusterCoreDNS")],
        "kubeDNSOverrides": kube
        if kube is not None
        else [_dns_zone(".", "ClusterCoreDNS"), _dns_zone("cluster.local", "ClusterCoreDNS")],
    }


# AKSNodeClass (karpenter.azure.com/v1beta1): the upstream Azure provider's CRD rules and messages.
AKS_CASES = [
    Case(
        "aks-unknown-image-family",
        "AKSNodeClass",
        _set("spec.imageFamily", "Debian"),
        "spec.imageFamily",
        'Unsupported value: "Debian"',
    ),
    Case(
        "aks-os-disk-too-small",
        "AKSNodeClass",
        _set("spec.osDiskSizeGB", 29),
        "spec.osDiskSizeGB",
        "should be greater than or equal to 30",
    ),
    Case(
        "aks-max-pods-too-many",
        "AKSNodeClass",
        _set("spec.maxPods", 251),
        "spec.maxPods",
        "should be less than or equal to 250",
    ),
    Case(
        "aks-subnet-not-a-subnet-id",
        "AKSNodeClass",
        _set("spec.vnetSubnetID", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network"),
        "spec.vnetSubnetID",
        "should match",
    ),
    Case(
        "aks-fips-on-ubuntu2204",
        "AKSNodeClass",
        _set("spec.fipsMode", "FIPS"),
        "spec",
        "FIPS is not yet supported for Ubuntu2204 or Ubuntu2404",
    ),
    Case(
        "aks-linux-config-on-windows",
        "AKSNodeClass",
        _set("spec", {"imageFamily": "Windows2022", "linuxOSConfig": {}}),
        "spec",
        "linuxOSConfig is not supported for Windows image families",
    ),
    Case(
        "aks-swap-without-fail-swap-on-false",
        "AKSNodeClass",
        _set("spec.linuxOSConfig", {"swapFileSize": "2Gi"}),
        "spec",
        "kubelet.failSwapOn must be set to false when linuxOSConfig.swapFileSize is specified",
    ),
    Case(
        "aks-image-gc-thresholds-inverted",
        "AKSNodeClass",
        _set("spec.kubelet", {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}),
        "spec.kubelet",
        "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
    ),
    Case(
        "aks-tag-key-with-percent",
        "AKSNodeClass",
        _set("spec.tags", {"cost%center": "a"}),
        "spec.tags",
        "tags keys must not contain '<', '>', '%', '&', or '?'",
    ),
    Case(
        "aks-sysctl-rmem-default-over-max",
        "AKSNodeClass",
        _set(
            "spec.linuxOSConfig",
            {"sysctls": {"netCoreRmemDefault": 300000, "netCoreRmemMax": 250000}},
        ),
        "spec.linuxOSConfig.sysctls",
        "netCoreRmemDefault must be <= netCoreRmemMax",
    ),
    Case(
        "aks-sysctl-port-range-reversed",
        "AKSNodeClass",
        _set("spec.linuxOSConfig", {"sysctls": {"netIPv4IPLocalPortRange": "40000 33000"}}),
        "spec.linuxOSConfig.sysctls",
        "netIPv4IPLocalPortRange first port must be <= last port",
    ),
    Case(
        "aks-local-dns-missing-zone",
        "AKSNodeClass",
        _set("spec.localDNS", _local_dns(kube=[_dns_zone(".", "ClusterCoreDNS")])),
        "spec.localDNS.kubeDNSOverrides",
        "must contain required zones '.' and 'cluster.local'",
    ),
    Case(
        "aks-local-dns-cluster-local-to-vnet",
        "AKSNodeClass",
        _set(
            "spec.localDNS",
            _local_dns(vnet=[_dns_zone(".", "VnetDNS"), _dns_zone("cluster.local", "VnetDNS")]),
        ),
        "spec.localDNS.vnetDNSOverrides[1]",
        "'cluster.local' cannot be forwarded to VnetDNS",
    ),
    Case(
        "aks-local-dns-stale-verify-over-tcp",
        "AKSNodeClass",
        _set(
            "spec.localDNS",
            _local_dns(
                kube=[
                    _dns_zone(".", "ClusterCoreDNS", protocol="ForceTCP"),
                    _dns_zone("cluster.local", "ClusterCoreDNS"),
                ]
            ),
        ),
        "spec.localDNS.kubeDNSOverrides[0]",
        "serveStale Verify cannot be used with protocol ForceTCP",
    ),
]

CASES: list[Case] = [
    *NODEPOOL_CASES,
    *NODECLAIM_CASES,
    *EC2_CASES,
    *AKS_CASES,
    *KWOK_CASES,
    *SCHEDULINGCONFIG_CASES,
    *NODEOVERLAY_CASES,
    *CAPACITYBUFFER_CASES,
]
