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
    for table in (podmod._REQUESTS, podmod._NODE_TERMS, podmod._TOLERATIONS, podmod._POD_TERMS):
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
