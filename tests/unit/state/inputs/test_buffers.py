"""CapacityBuffers in the engine's input: what a buffer resolves to (its status), and the
virtual pods a ready buffer adds to the pods to place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from karpy.apis.autoscaling.v1beta1 import validate_capacitybuffer
from karpy.apis.errors import ValidationError
from karpy.state.inputs import (
    ANNOTATION_CAPACITY_BUFFER,
    ClusterObjects,
    Resolution,
    build_input,
    generated_template_name,
    resolve,
    virtual_pods,
)
from tests.kit import capacitybuffer, podtemplate, served

JSON = dict[str, Any]


def _resolve(
    buffer: JSON, templates: Sequence[JSON] = (), workloads: Sequence[JSON] = ()
) -> Resolution:
    by_name = {(t["metadata"]["namespace"], t["metadata"]["name"]): t for t in templates}
    by_ref = {(w["metadata"]["namespace"], w["kind"], w["metadata"]["name"]): w for w in workloads}
    return resolve(
        buffer,
        pod_template=lambda ns, name: by_name.get((ns, name)),
        workload=lambda ns, _group, kind, name: by_ref.get((ns, kind, name)),
    )


def _deployment(name: str, replicas: int, cpu: str = "500m") -> JSON:
    template = podtemplate(name, "ns", cpu=cpu)["template"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"replicas": replicas, "template": template},
    }


def _ready(buffer: JSON, template: str, replicas: int, generation: int | None = 1) -> JSON:
    out = served(buffer, uid=f"uid-{buffer['metadata']['name']}")
    out["status"] = {
        "podTemplateRef": {"name": template},
        "replicas": replicas,
        "podTemplateGeneration": generation,
        "conditions": [{"type": "ReadyForProvisioning", "status": "True"}],
    }
    return out


def test_replicas_of_a_pod_template() -> None:
    template = served(podtemplate("chunk", "ns", cpu="1"), uid="t")
    template["metadata"]["generation"] = 4
    got = _resolve(
        capacitybuffer("b", "ns", podTemplateRef={"name": "chunk"}, replicas=3), [template]
    )
    assert (got.error, got.template_name, got.replicas, got.generation) == (None, "chunk", 3, 4)


def test_a_missing_template_names_the_field() -> None:
    got = _resolve(capacitybuffer("b", "ns", podTemplateRef={"name": "nope"}, replicas=1))
    assert got.replicas is None
    assert got.error == "spec.podTemplateRef: PodTemplate ns/nope not found"
    # the status says it in Karpenter's words
    assert (got.reason, got.status_message) == (
        "PodTemplateNotFound",
        'podtemplates "nope" not found',
    )


@pytest.mark.parametrize(
    ("group", "kind", "words"),
    [
        ("apps", "Deployment", 'deployments.apps "w" not found'),
        ("apps", "StatefulSet", 'statefulsets.apps "w" not found'),
        ("batch", "Job", 'jobs.batch "w" not found'),
        ("", "ReplicationController", 'replicationcontrollers "w" not found'),
    ],
)
def test_a_missing_workload_is_scalable_ref_not_found(group: str, kind: str, words: str) -> None:
    ref = {"apiGroup": group, "kind": kind, "name": "w"}
    got = _resolve(capacitybuffer("b", "ns", scalableRef=ref, replicas=1))
    assert got.error == f"spec.scalableRef: {kind} ns/w not found"
    assert (got.reason, got.status_message) == ("ScalableRefNotFound", words)


def test_other_failures_are_resolution_failed_with_our_message() -> None:
    template = podtemplate("chunk", "ns", cpu="2")
    unbounded = capacitybuffer(
        "b", "ns", podTemplateRef={"name": "chunk"}, limits={"nvidia.com/gpu": "2"}
    )
    got = _resolve(unbounded, [template])
    assert got.reason == "ResolutionFailed" and got.status_message == got.error
    widget = {"apiGroup": "example.com", "kind": "Widget", "name": "w"}
    assert _resolve(capacitybuffer("b", "ns", scalableRef=widget, replicas=1)).reason == (
        "ResolutionFailed"
    )
    neither = _resolve(capacitybuffer("b", "ns", replicas=1))
    assert (neither.reason, neither.status_message) == (
        "ResolutionFailed",
        "Neither podTemplateRef nor scalableRef is set",
    )
    assert (
        _resolve(
            capacitybuffer("b", "ns", podTemplateRef={"name": "chunk"}, replicas=1), [template]
        ).reason
        is None
    )


def test_limits_cap_replicas_or_size_the_buffer_alone() -> None:
    template = podtemplate("chunk", "ns", cpu="2")
    capped = capacitybuffer(
        "b", "ns", podTemplateRef={"name": "chunk"}, replicas=10, limits={"cpu": "7"}
    )
    assert _resolve(capped, [template]).replicas == 3
    alone = capacitybuffer("b", "ns", podTemplateRef={"name": "chunk"}, limits={"cpu": "8500m"})
    assert _resolve(alone, [template]).replicas == 4
    unbounded = capacitybuffer(
        "b", "ns", podTemplateRef={"name": "chunk"}, limits={"nvidia.com/gpu": "2"}
    )
    assert "spec.limits bounds no resource" in (_resolve(unbounded, [template]).error or "")


def test_a_percentage_of_a_workload_rounds_up_and_the_larger_count_wins() -> None:
    web = _deployment("web", replicas=7)
    ref = {"apiGroup": "apps", "kind": "Deployment", "name": "web"}
    got = _resolve(capacitybuffer("b", "ns", scalableRef=ref, percentage=20), workloads=[web])
    assert got.error is None
    assert got.replicas == 2  # 20% of 7 = 1.4, rounded up
    assert got.template_name == generated_template_name("b") == "capacitybuffer-b-pod-template"
    assert got.template == web["spec"]["template"]
    both = capacitybuffer("b", "ns", scalableRef=ref, percentage=20, replicas=5)
    assert _resolve(both, workloads=[web]).replicas == 5
    none = _resolve(capacitybuffer("b", "ns", scalableRef=ref), workloads=[web])
    assert none.error and "neither replicas nor percentage" in none.error


def test_unsupported_kinds_and_strategies_are_errors() -> None:
    ref = {"apiGroup": "example.com", "kind": "Widget", "name": "w"}
    got = _resolve(capacitybuffer("b", "ns", scalableRef=ref, replicas=1))
    assert got.error and got.error.startswith("spec.scalableRef: kind example.com/Widget")
    other = capacitybuffer(
        "b", "ns", podTemplateRef={"name": "t"}, replicas=1, provisioningStrategy="x/standby"
    )
    assert (_resolve(other, [podtemplate("t", "ns")]).error or "").startswith(
        "spec.provisioningStrategy"
    )


def test_ready_buffers_add_virtual_pods_of_their_template() -> None:
    template = served(podtemplate("chunk", "ns", cpu="1"), uid="t")
    template["metadata"]["generation"] = 1
    template["template"]["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "cfg", "configMap": {"name": "cfg"}},
    ]
    templates = {("ns", "chunk"): template}
    ready = _ready(
        capacitybuffer("b", "ns", podTemplateRef={"name": "chunk"}, replicas=3), "chunk", 3
    )
    pods = virtual_pods([ready], templates)
    assert [p["metadata"]["name"] for p in pods] == [f"capacitybuffer-b-{i}" for i in range(3)]
    assert all(p["metadata"]["annotations"][ANNOTATION_CAPACITY_BUFFER] == "ns/b" for p in pods)
    assert pods[0]["spec"]["volumes"] == [{"name": "cfg", "configMap": {"name": "cfg"}}]
    assert len({p["metadata"]["uid"] for p in pods}) == 3

    # not ready, a template changed since the status, or a buffer being deleted: no pods
    not_ready = _ready(capacitybuffer("c", "ns"), "chunk", 3)
    not_ready["status"]["conditions"][0]["status"] = "False"
    stale = _ready(capacitybuffer("d", "ns"), "chunk", 3, generation=0)
    deleting = _ready(capacitybuffer("e", "ns"), "chunk", 3)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert virtual_pods([not_ready, stale, deleting], templates) == []


def test_the_builder_places_virtual_pods_and_names_them() -> None:
    template = served(podtemplate("chunk", "ns", cpu="1"), uid="t")
    ready = _ready(capacitybuffer("b", "ns", podTemplateRef={"name": "chunk"}), "chunk", 3, None)
    built = build_input(
        ClusterObjects(pending=[], buffers=[ready], pod_templates={("ns", "chunk"): template})
    )
    assert sorted(p.key for p in built.input.pods) == [f"ns/capacitybuffer-b-{i}" for i in range(3)]
    assert built.virtual == frozenset(p.key for p in built.input.pods)
    assert all(p.requests["cpu"] == 1000 for p in built.input.pods)


def test_the_crd_rules_of_the_spec() -> None:
    with pytest.raises(ValidationError, match="replicas or limits must also be set"):
        validate_capacitybuffer(capacitybuffer("b", podTemplateRef={"name": "t"}))
    with pytest.raises(ValidationError, match="either PodTemplateRef or ScalableRef"):
        validate_capacitybuffer(
            capacitybuffer(
                "b",
                podTemplateRef={"name": "t"},
                scalableRef={"kind": "Deployment", "name": "d"},
                replicas=1,
            )
        )
    with pytest.raises(ValidationError, match=r"spec\.replicas"):
        validate_capacitybuffer(capacitybuffer("b", podTemplateRef={"name": "t"}, replicas=-1))
    ok = validate_capacitybuffer(capacitybuffer("b", podTemplateRef={"name": "t"}, replicas=2))
    assert ok.spec.provisioning_strategy == "buffer.x-k8s.io/active-capacity"
