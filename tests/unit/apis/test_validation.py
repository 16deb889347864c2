"""Python-side admission: the same rejects, paths and messages as the apiserver with our CRDs.

The invalid-manifest table is shared with tests/integration/test_crds.py, which runs it against
a real kube-apiserver.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.apis import ValidationError
from karpy.apis.aws.v1 import EC2NODECLASS, validate_ec2nodeclass
from karpy.apis.errors import RULES_NOT_CHECKED
from karpy.apis.kwok.v1alpha1 import validate_kwoknodeclass
from karpy.apis.registry import validate_object
from karpy.apis.v1 import NODEPOOL, validate_nodeclaim, validate_nodepool
from tests.unit.apis.apis_invalid_cases import (
    BASES,
    CASES,
    Case,
    ec2nodeclass,
    matches,
    nodeclaim,
    nodepool,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "manifests" / "examples"


def _errors(case: Case) -> ValidationError:
    old, new = case.objects()
    with pytest.raises(ValidationError) as info:
        validate_object(new, old=old)
    return info.value


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_invalid_manifest_is_rejected_at_its_field(case: Case) -> None:
    err = _errors(case)
    lines = [str(e) for e in err.errors]
    assert matches(case, lines), lines


def test_the_table_covers_every_kind_and_updates() -> None:
    assert len(CASES) >= 25
    assert {c.kind for c in CASES} == {
        "NodePool",
        "NodeClaim",
        "EC2NodeClass",
        "AKSNodeClass",
        "KWOKNodeClass",
        "SchedulingConfig",
        "NodeOverlay",
        "CapacityBuffer",
    }
    assert sum(c.update for c in CASES) >= 5
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("kind", sorted(BASES))
def test_every_base_object_is_valid(kind: str) -> None:
    """The table's objects differ from a valid one only by their mutation."""
    validate_object(BASES[kind]("base"))


def test_error_names_kind_object_and_paths() -> None:
    obj = nodepool("web")
    obj["spec"]["weight"] = 0
    with pytest.raises(ValidationError) as info:
        validate_nodepool(obj)
    message = str(info.value)
    assert message.startswith('NodePool "web" is invalid: [spec.weight: Invalid value: 0: ')
    assert info.value.paths()[0] == "spec.weight"
    assert isinstance(info.value, ValueError)


def test_blocking_errors_skip_the_rules_like_the_apiserver() -> None:
    obj = nodepool()
    obj["spec"]["template"]["spec"]["requirements"] = [{"key": "karpenter.sh/x", "operator": "X"}]
    with pytest.raises(ValidationError) as info:
        validate_nodepool(obj)
    lines = [str(e) for e in info.value.errors]
    assert any('Unsupported value: "X"' in line for line in lines)
    assert lines[-1] == f"<nil>: Invalid value: null: {RULES_NOT_CHECKED}"
    assert not any("is restricted" in line for line in lines)


def test_non_blocking_errors_still_run_the_rules() -> None:
    obj = nodepool()
    obj["spec"]["weight"] = 0
    obj["spec"]["template"]["spec"]["requirements"][0]["key"] = "karpenter.sh/x"
    with pytest.raises(ValidationError) as info:
        validate_nodepool(obj)
    paths = info.value.paths()
    assert "spec.weight" in paths
    assert "spec.template.spec.requirements[0].key" in paths


def test_unknown_fields_are_all_that_is_reported() -> None:
    obj = nodepool()
    obj["spec"]["weight"] = 0
    obj["spec"]["templates"] = {}
    with pytest.raises(ValidationError) as info:
        validate_nodepool(obj)
    assert [str(e) for e in info.value.errors] == ['spec.templates: unknown field "spec.templates"']


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda o: o.update(apiVersion="karpenter.sh/v1beta1"), "apiVersion"),
        (lambda o: o.update(kind="Provisioner"), "kind"),
        (lambda o: o["metadata"].pop("name"), "metadata.name"),
        (lambda o: o["metadata"].update(name="Not_A_Name"), "metadata.name"),
    ],
)
def test_type_and_object_metadata_are_checked(mutate: Any, path: str) -> None:
    obj = nodepool()
    mutate(obj)
    with pytest.raises(ValidationError) as info:
        NODEPOOL.validate(obj)
    assert path in info.value.paths()


def test_generate_name_is_enough() -> None:
    obj = nodeclaim()
    obj["metadata"] = {"generateName": "default-"}
    assert validate_nodeclaim(obj).metadata.generate_name == "default-"


def test_unknown_kind_is_rejected() -> None:
    with pytest.raises(ValidationError) as info:
        validate_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    assert info.value.paths() == ["kind"]


def test_not_an_object_is_rejected() -> None:
    with pytest.raises(ValidationError):
        NODEPOOL.admit(["not", "a", "mapping"])  # type: ignore[arg-type]


# --- the nodeClassRef leniency -------------------------------------------------------------
def _legacy_ref(obj: dict[str, Any], api_version: str = "karpenter.k8s.aws/v1") -> None:
    obj["spec"]["template"]["spec"]["nodeClassRef"] = {
        "apiVersion": api_version,
        "kind": "EC2NodeClass",
        "name": "default",
    }


def test_legacy_api_version_is_read_as_the_group() -> None:
    obj = nodepool()
    _legacy_ref(obj)
    pool = validate_nodepool(obj)
    ref = pool.spec.template.spec.node_class_ref
    assert ref.group is None
    assert ref.group_name() == "karpenter.k8s.aws"
    assert ref.label() == ("karpenter.k8s.aws/ec2nodeclass", "default")


def test_switching_between_group_and_api_version_forms_is_not_a_change() -> None:
    stored = nodepool()
    updated = copy.deepcopy(stored)
    _legacy_ref(updated)
    validate_nodepool(updated, old=stored)
    validate_nodepool(stored, old=updated)


def test_legacy_and_group_together_must_agree() -> None:
    obj = nodepool()
    obj["spec"]["template"]["spec"]["nodeClassRef"]["apiVersion"] = "karpenter.k8s.aws/v1"
    validate_nodepool(obj)


def test_legacy_form_works_for_nodeclaims() -> None:
    obj = nodeclaim()
    obj["spec"]["nodeClassRef"] = {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "K",
        "name": "n",
    }
    assert validate_nodeclaim(obj).spec.node_class_ref.group_name() == "karpenter.kwok.sh"


def test_legacy_api_version_must_have_a_group() -> None:
    obj = nodepool()
    _legacy_ref(obj, api_version="v1")
    with pytest.raises(ValidationError) as info:
        validate_nodepool(obj)
    assert info.value.paths() == ["spec.template.spec.nodeClassRef.apiVersion"]


# --- updates that are allowed --------------------------------------------------------------
def test_unchanged_nodeclaim_spec_is_accepted_on_update() -> None:
    stored = nodeclaim()
    updated = copy.deepcopy(stored)
    updated["metadata"]["labels"] = {"a": "b"}
    updated["status"] = {"providerID": "kwok://n1"}
    validate_nodeclaim(updated, old=stored)


def test_nodepool_fields_other_than_the_class_may_change() -> None:
    stored = nodepool()
    updated = copy.deepcopy(stored)
    updated["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "other"
    updated["spec"]["weight"] = 50
    validate_nodepool(updated, old=stored)


def test_transition_rules_do_not_run_on_create() -> None:
    # The same object that fails as an update of a static pool is fine when created.
    obj = nodepool()
    obj["spec"]["replicas"] = 3
    validate_nodepool(obj)


@pytest.mark.parametrize(
    "spec",
    [{"replicas": 0}, {"replicas": 3, "limits": {"nodes": "5"}}, {"replicas": 2, "limits": {}}],
    ids=["zero", "node-limit", "empty-limits"],
)
def test_static_nodepools_may_have_replicas_and_a_node_limit(spec: dict[str, Any]) -> None:
    obj = nodepool()
    obj["spec"].update(spec)
    assert validate_nodepool(obj).is_static


def test_static_nodepool_replicas_and_node_limit_may_change() -> None:
    stored = nodepool()
    stored["spec"]["replicas"] = 3
    updated = copy.deepcopy(stored)
    updated["spec"]["replicas"] = 1
    updated["spec"]["limits"] = {"nodes": "4"}
    assert validate_nodepool(updated, old=stored).spec.replicas == 1


# --- defaults ------------------------------------------------------------------------------
def test_nodepool_defaults() -> None:
    obj = nodepool()
    del obj["spec"]["disruption"]
    pool = validate_nodepool(obj)
    assert pool.spec.template.spec.expire_after == "720h"
    assert pool.spec.disruption.consolidate_after == "0s"
    assert pool.spec.disruption.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert [b.to_dict() for b in pool.spec.disruption.budgets] == [{"nodes": "10%"}]


def test_budget_nodes_default_inside_a_given_budget() -> None:
    obj = nodepool()
    obj["spec"]["disruption"]["budgets"] = [{"reasons": ["Empty"]}]
    pool = validate_nodepool(obj)
    assert pool.spec.disruption.budgets[0].nodes == "10%"


def test_nodeclaim_expire_after_default() -> None:
    assert validate_nodeclaim(nodeclaim()).spec.expire_after == "720h"


def test_metadata_options_defaults_whole_and_partial() -> None:
    whole = validate_ec2nodeclass(ec2nodeclass()).spec.metadata_options.to_dict()
    assert whole == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
    obj = ec2nodeclass()
    obj["spec"]["metadataOptions"] = {"httpPutResponseHopLimit": 2}
    partial = EC2NODECLASS.admit(obj)["spec"]["metadataOptions"]
    assert partial == {**whole, "httpPutResponseHopLimit": 2}


def test_kwok_nodeclass_is_ready_by_default() -> None:
    kwok = validate_kwoknodeclass(
        {
            "apiVersion": "karpenter.kwok.sh/v1alpha1",
            "kind": "KWOKNodeClass",
            "metadata": {"name": "k"},
        }
    )
    assert kwok.status.conditions is not None
    assert [(c.type, c.status, c.reason) for c in kwok.status.conditions] == [
        ("Ready", "True", "Ready")
    ]


def test_admit_does_not_modify_its_input() -> None:
    obj = nodepool()
    before = copy.deepcopy(obj)
    NODEPOOL.admit(obj)
    assert obj == before


# --- the examples --------------------------------------------------------------------------
def _example_docs() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def test_examples_are_valid_and_names_never_collide() -> None:
    docs = _example_docs()
    ours = [d for d in docs if d["apiVersion"].startswith(("karpenter.", "autoscaling.x-k8s.io/"))]
    for doc in ours:
        validate_object(doc)
    keys = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs]
    assert len(keys) == len(set(keys))
    names = {(d["kind"], d["metadata"]["name"]) for d in ours}
    assert names == {
        ("NodePool", "default"),
        ("EC2NodeClass", "default"),
        ("NodePool", "local"),
        ("NodePool", "static"),
        ("KWOKNodeClass", "local"),
        ("NodeOverlay", "m-savings-plan"),
        ("NodeOverlay", "fuse-device"),
        ("SchedulingConfig", "default"),
        ("CapacityBuffer", "web-headroom"),
        ("CapacityBuffer", "inflate-burst"),
    }


def test_static_example_nodepool_is_a_static_pool_with_room_for_a_replacement() -> None:
    (doc,) = [
        d for d in _example_docs() if d["kind"] == "NodePool" and d["metadata"]["name"] == "static"
    ]
    pool = validate_nodepool(doc)
    assert pool.is_static
    assert pool.spec.replicas == 3
    assert pool.spec.limits == {"nodes": "4"}


def test_aws_example_nodepool_is_the_one_documented() -> None:
    (doc,) = [
        d for d in _example_docs() if d["kind"] == "NodePool" and d["metadata"]["name"] == "default"
    ]
    pool = validate_nodepool(doc)
    reqs = {r.key: (r.operator, r.values) for r in pool.spec.template.spec.requirements}
    assert reqs == {
        "kubernetes.io/arch": ("In", ["amd64", "arm64"]),
        "karpenter.sh/capacity-type": ("In", ["spot", "on-demand"]),
        "karpenter.k8s.aws/instance-category": ("In", ["c", "m", "r"]),
        "karpenter.k8s.aws/instance-generation": ("Gt", ["2"]),
    }
    assert pool.spec.limits == {"cpu": "1000", "memory": "4000Gi"}
    assert pool.spec.disruption.consolidation_policy == "WhenEmpty"
    assert pool.spec.disruption.consolidate_after == "30s"
    assert pool.spec.template.spec.node_class_ref.group_name() == "karpenter.k8s.aws"


def test_aws_example_nodeclass_uses_alias_and_discovery_tags() -> None:
    (doc,) = [d for d in _example_docs() if d["kind"] == "EC2NodeClass"]
    nodeclass = validate_ec2nodeclass(doc)
    assert nodeclass.spec.alias() == ("al2023", "latest")
    assert nodeclass.spec.resolved_ami_family() == "AL2023"
    assert nodeclass.spec.role
    for terms in (
        nodeclass.spec.subnet_selector_terms,
        nodeclass.spec.security_group_selector_terms,
    ):
        assert terms[0].tags is not None and "karpenter.sh/discovery" in terms[0].tags
    assert nodeclass.spec.tags
