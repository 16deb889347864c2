"""Volume topology read from claims, volumes and StorageClasses (`karpy.state.inputs`)."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.scheduling.requirements import Requirements
from karpy.state.inputs import PodViews, VolumeError, VolumeTopology
from tests.kit import pod, served

ZONE = "topology.kubernetes.io/zone"


def _claim_vol(claim: str) -> dict[str, Any]:
    return {"name": claim, "persistentVolumeClaim": {"claimName": claim}}


def _claim(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def _pv(name: str, *terms: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": zones}]}
                        for zones in terms
                    ]
                }
            }
        },
    }


def _class(name: str, zones: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, **extra},
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}],
    }


def _zones(terms: tuple[Requirements, ...]) -> list[set[str]]:
    return [set(t[ZONE].values) for t in terms]


def test_each_node_selector_term_of_a_volume_is_an_alternative() -> None:
    topo = VolumeTopology(
        claims=[_claim("data", volumeName="pv")], volumes=[_pv("pv", ["a"], ["b"])]
    )
    assert _zones(topo.terms(served(pod("p", "ns", volumes=[_claim_vol("data")])))) == [
        {"a"},
        {"b"},
    ]


def test_two_volumes_must_both_hold() -> None:
    topo = VolumeTopology(
        claims=[_claim("x", volumeName="pv-x"), _claim("y", storageClassName="wffc")],
        volumes=[_pv("pv-x", ["a", "b"])],
        classes=[_class("wffc", ["b", "c"])],
    )
    (terms,) = topo.terms(served(pod("p", "ns", volumes=[_claim_vol("x"), _claim_vol("y")])))
    assert set(terms[ZONE].values) == {"b"}


def test_immediate_classes_and_explicitly_classless_claims_pin_nothing() -> None:
    immediate = {**_class("now", ["a"]), "volumeBindingMode": "Immediate"}
    default = _class(
        "dflt", ["d"], annotations={"storageclass.kubernetes.io/is-default-class": "true"}
    )
    topo = VolumeTopology(
        claims=[_claim("i", storageClassName="now"), _claim("none", storageClassName="")],
        classes=[immediate, default],
    )
    assert topo.terms(served(pod("p", "ns", volumes=[_claim_vol("i")]))) == ()
    assert topo.terms(served(pod("p", "ns", volumes=[_claim_vol("none")]))) == ()
    assert _zones(
        VolumeTopology(claims=[_claim("c")], classes=[default]).terms(
            served(pod("p", "ns", volumes=[_claim_vol("c")]))
        )
    ) == [{"d"}]


def test_ephemeral_volume_reads_its_claim_or_else_its_template() -> None:
    vol = {
        "name": "scratch",
        "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "wffc"}}},
    }
    classes = [_class("wffc", ["c"])]
    assert _zones(VolumeTopology(classes=classes).terms(served(pod("p", "ns", volumes=[vol])))) == [
        {"c"}
    ]
    created = _claim("p-scratch", volumeName="pv")
    topo = VolumeTopology(claims=[created], volumes=[_pv("pv", ["a"])], classes=classes)
    assert _zones(topo.terms(served(pod("p", "ns", volumes=[vol])))) == [{"a"}]


def test_a_missing_claim_names_the_field_and_the_claim() -> None:
    with pytest.raises(VolumeError, match=r'spec.volumes\[0\].*"ns/gone" not found'):
        VolumeTopology().terms(served(pod("p", "ns", volumes=[_claim_vol("gone")])))


def test_a_view_is_rebuilt_when_its_claim_is_bound_without_a_new_pod_version() -> None:
    views = PodViews()
    claiming = served(pod("p", "ns", volumes=[_claim_vol("data")]))
    before = VolumeTopology(
        claims=[_claim("data", storageClassName="wffc")], classes=[_class("wffc", ["a", "b"])]
    )
    after = VolumeTopology(claims=[_claim("data", volumeName="pv")], volumes=[_pv("pv", ["b"])])
    first = views.view(claiming, volume_terms=before.terms(claiming))
    second = views.view(claiming, volume_terms=after.terms(claiming))
    assert _zones(first.volume_terms) == [{"a", "b"}]
    assert _zones(second.volume_terms) == [{"b"}]


def test_a_claim_bound_to_an_unknown_volume_names_the_claim_and_the_volume() -> None:
    """As Karpenter, the pod is an error for this pass rather than placed without the
    volume's topology (which could put it in another zone than its volume)."""
    topo = VolumeTopology(claims=[_claim("data", volumeName="pv-new")])
    with pytest.raises(
        VolumeError,
        match=r'spec.volumes\[0\]: PersistentVolumeClaim "ns/data" is bound to '
        r'PersistentVolume "pv-new", which is not found',
    ):
        topo.terms(served(pod("p", "ns", volumes=[_claim_vol("data")])))


def test_a_pod_whose_volume_is_not_known_is_left_out_of_the_plan() -> None:
    """Through the one builder `karpy run` and `karpy simulate` share: the pod is reported
    (non-strict, the provisioner) or named in the error (strict, simulate)."""
    from karpy.state.inputs import ClusterObjects, InputError, build_input

    waiting = served(pod("waiting", "ns", volumes=[_claim_vol("data")]))
    free = served(pod("free", "ns"))
    objects = ClusterObjects(pending=[waiting, free], claims=[_claim("data", volumeName="pv-new")])
    built = build_input(objects)
    assert [p.key for p in built.input.pods] == ["ns/free"]
    assert 'PersistentVolume "pv-new"' in built.errors["ns/waiting"]
    with pytest.raises(InputError, match=r'Pod ns/waiting: .*"ns/data".*"pv-new"'):
        build_input(objects, strict=True)
