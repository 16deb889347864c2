"""Pods sharing a spec are parsed once: each view must equal what a fresh parse gives."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from karpy.scheduling import pods as podmod
from karpy.scheduling.pods import PodError, pod_view


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
        ],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "matchLabelKeys": ["pod-template-hash"],
            }
        ],
    }
    base.update(spec)
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "labels": {"app": "web", "pod-template-hash": "abc"},
            "creationTimestamp": f"2026-01-01T00:00:0{name[-1]}Z",
        },
        "spec": base,
    }


def _fields(view: podmod.PodView) -> dict[str, Any]:
    return {name: getattr(view, name) for name in podmod.PodView.__slots__}


def _fresh(raw: dict[str, Any]) -> dict[str, Any]:
    tables = (podmod._SPECS, podmod._REQUESTS, podmod._NODE_TERMS, podmod._TOLERATIONS)
    for table in (*tables, podmod._POD_TERMS):
        table.clear()
    return _fields(pod_view(raw))


def test_a_cached_shape_gives_the_view_a_fresh_parse_gives() -> None:
    first, second = _pod("a1"), _pod("a2", priority=5, nodeName="n1")
    pod_view(first)
    cached = _fields(pod_view(second))
    assert cached == _fresh(second)
    assert cached["name"] == "a2" and cached["uid"] == "uid-a2"
    assert cached["priority"] == 5 and cached["node_name"] == "n1"


def test_views_of_one_shape_do_not_share_requests() -> None:
    a, b = pod_view(_pod("b1")), pod_view(_pod("b2"))
    assert a.signature == b.signature
    a.requests["cpu"] = 0
    assert b.requests["cpu"] == 1000
    assert pod_view(_pod("b3")).requests["cpu"] == 1000


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p["metadata"]["labels"].update({"pod-template-hash": "def"}),
        lambda p: p["metadata"].update({"namespace": "other"}),
        lambda p: p["spec"]["containers"][0]["resources"]["requests"].update({"cpu": "2"}),
        lambda p: p["spec"]["tolerations"][0].update({"effect": "NoSchedule"}),
        lambda p: p["spec"].update({"nodeSelector": {"zone": "a"}}),
        lambda p: p["spec"]["containers"][0].update({"ports": [{"hostPort": 80}]}),
        lambda p: p["spec"].update({"overhead": {"cpu": "100m"}}),
        lambda p: p["spec"].update({"topologySpreadConstraints": []}),
    ],
)
def test_a_different_spec_or_label_is_parsed_anew(change: Any) -> None:
    pod_view(_pod("c1"))
    other = copy.deepcopy(_pod("c2"))
    change(other)
    view = _fields(pod_view(other))
    assert view == _fresh(other)
    assert view["signature"] != pod_view(_pod("c3")).signature


def test_an_unreadable_spec_is_reported_even_after_a_readable_one() -> None:
    pod_view(_pod("d1"))
    bad = _pod("d2", tolerations=[{"key": "k", "operator": "Sometimes"}])
    with pytest.raises(PodError, match=r"spec\.tolerations\[0\]\.operator"):
        pod_view(bad)


def test_labels_change_pod_terms_only_through_label_keys() -> None:
    """Without matchLabelKeys a spec's pod terms are shared by pods of any labels; with them,
    each pod's selector carries its own label values."""
    plain = _pod("e1")
    del plain["spec"]["topologySpreadConstraints"][0]["matchLabelKeys"]
    pod_view(plain)
    relabelled = copy.deepcopy(plain)
    relabelled["metadata"]["labels"] = {"app": "other"}
    assert _fields(pod_view(relabelled)) == _fresh(relabelled)
    pod_view(_pod("e2"))
    keyed = _pod("e3")
    keyed["metadata"]["labels"]["pod-template-hash"] = "xyz"
    view = _fields(pod_view(keyed))
    assert view == _fresh(keyed)
    assert "xyz" in repr(view["spread"][0].selector)


@pytest.mark.parametrize(
    ("good", "bad", "error"),
    [
        # equal in Python (1 == 1.0), but only an integer is a valid maxSkew
        ({"maxSkew": 1}, {"maxSkew": 1.0}, PodError),
        # NaN and None encode alike in JSON: a NaN host port must not reuse the None one's parse
        ({"hostPort": None}, {"hostPort": float("nan")}, ValueError),
    ],
)
def test_values_that_encode_alike_are_not_confused(
    good: dict[str, Any], bad: dict[str, Any], error: type[Exception]
) -> None:
    def pod(name: str, values: dict[str, Any]) -> dict[str, Any]:
        raw = _pod(name)
        if "maxSkew" in values:
            raw["spec"]["topologySpreadConstraints"][0].update(values)
        else:
            raw["spec"]["containers"][0]["ports"] = [{"containerPort": 80, **values}]
        return raw

    pod_view(pod("f1", good))
    with pytest.raises(error):
        pod_view(pod("f2", bad))
