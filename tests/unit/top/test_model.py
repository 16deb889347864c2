"""`karpy top`'s data model: rows, prices, states, totals, filters and sorts on a small fleet
(the objects as watches deliver them), and the text table `--once` prints."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from kubetest import node_status

from karpy.scheduling.selectors import SelectorError
from karpy.top.estimate import lower_bound, price_book
from karpy.top.model import (
    DELETED,
    HOURS_PER_MONTH,
    MODIFIED,
    Filter,
    Fleet,
    FleetView,
    age_text,
    bar,
    parse_selector,
)
from karpy.top.table import render_table
from tests.kit import node
from tests.unit.top.fleet import C4_ON_DEMAND, NOW, fleet_objects, managed, worker

JSON = dict[str, Any]


def _fleet() -> Fleet:
    fleet = Fleet()
    for kind, obj in fleet_objects():
        fleet.apply(kind, "ADDED", obj)
    return fleet


def _view(fleet: Fleet, **kw: object) -> FleetView:
    return fleet.view(prices=price_book(fleet.instance_types(), fleet.zones()), now=NOW, **kw)  # type: ignore[arg-type]


def test_a_row_per_node_and_launching_nodeclaim_with_price_requests_and_state() -> None:
    view = _view(_fleet())
    rows = {r.name: r for r in view.rows}
    assert sorted(rows) == ["batch-a", "batch-b", "loose", "web-a", "web-b"]
    web_a = rows["web-a"]
    assert (web_a.nodepool, web_a.instance_type, web_a.capacity_type, web_a.zone) == (
        "web",
        "c-4x-amd64-linux",
        "on-demand",
        "test-zone-a",
    )
    assert web_a.price == pytest.approx(C4_ON_DEMAND) and web_a.price_exact
    assert (web_a.cpu_requested, web_a.cpu_allocatable) == (3000, 4000)
    assert (web_a.memory_requested, web_a.memory_allocatable) == (2 * 2**30, 16 * 2**30)
    assert web_a.pods == 2 and web_a.states == ("Ready",)
    assert web_a.utilisation == pytest.approx(0.75)
    # drifted, and its 3h expireAfter ends within a day
    assert rows["batch-a"].states == ("Ready", "drifted", "expiring")
    assert rows["batch-a"].price is not None and rows["batch-a"].price < C4_ON_DEMAND  # spot
    assert rows["batch-b"].states == ("Launching",)
    # a node outside any NodePool, in a zone the catalogue lacks: the type's price, estimated
    loose = rows["loose"]
    assert loose.nodepool is None and loose.states == ("NotReady",)
    assert loose.price == pytest.approx(C4_ON_DEMAND) and not loose.price_exact


def test_rows_are_keyed_by_provider_id_and_unlaunched_nodeclaims_are_not_rows() -> None:
    # rows are the controller's join: a NodeClaim counts once it has a providerID
    fleet = _fleet()
    (_, claim), (_, node_obj) = managed("web-c", "web")
    del claim["status"]["providerID"]
    fleet.apply("nodeclaims", "ADDED", claim)
    rows = _view(fleet).rows
    assert "web-c" not in {r.name for r in rows}
    assert len({r.key for r in rows}) == len(rows) == 5
    fleet.apply("nodes", "ADDED", node_obj)
    (row,) = [r for r in _view(fleet).rows if r.name == "web-c"]
    assert row.key == "kwok://web-c" and row.nodeclaim is None  # not joined yet


def test_a_disrupting_node_says_so() -> None:
    fleet = _fleet()
    node = next(o for o in fleet.items("nodes") if o["metadata"]["name"] == "web-b")
    tainted = {
        **node,
        "spec": {
            **node["spec"],
            "taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}],
        },
    }
    fleet.apply("nodes", MODIFIED, tainted)
    rows = {r.name: r for r in _view(fleet).rows}
    assert rows["web-b"].states == ("Ready", "disrupting")


def test_totals_per_nodepool_and_cluster() -> None:
    view = _view(_fleet())
    pools = {p.nodepool: p for p in view.pools}
    # karpy's own status.cost when every node of the NodePool is shown
    assert (pools["web"].per_hour, pools["web"].source) == (0.3, "status")
    batch = pools["batch"]
    assert batch.source == "catalogue" and batch.nodes == 2
    assert batch.per_hour == pytest.approx(
        sum(r.price or 0 for r in view.rows if r.nodepool == "batch")
    )
    assert pools[""].nodes == 1
    cluster = view.cluster
    assert cluster.nodes == 5
    assert cluster.per_hour == pytest.approx(sum(p.per_hour for p in view.pools))
    assert cluster.per_month == pytest.approx(cluster.per_hour * HOURS_PER_MONTH)
    doc = view.to_dict()
    assert doc["cluster"]["perMonth"] == round(cluster.per_hour * HOURS_PER_MONTH, 2)
    assert [n["name"] for n in doc["nodes"]] == [r.name for r in view.rows]


def test_a_selector_that_narrows_a_nodepool_prices_its_rows_from_the_catalogue() -> None:
    view = _view(
        _fleet(), filter=Filter(selector=parse_selector("topology.kubernetes.io/zone=test-zone-b"))
    )
    assert [r.name for r in view.rows] == ["web-b"]
    (web,) = view.pools
    assert web.source == "catalogue" and web.per_hour == pytest.approx(C4_ON_DEMAND)


def test_filter_by_nodepool_and_sorts() -> None:
    fleet = _fleet()
    view = _view(fleet, filter=Filter(nodepools=frozenset({"web"})))
    assert [r.name for r in view.rows] == ["web-a", "web-b"]
    assert [p.nodepool for p in view.pools] == ["web"]
    by_cost = [r.name for r in _view(fleet, sort="cost").rows]
    assert by_cost[-1] == "batch-a"  # the spot node is the cheapest
    by_use = [r.name for r in _view(fleet, sort="utilisation").rows]
    assert by_use[:2] == ["batch-b", "loose"] and set(by_use[-2:]) == {"batch-a", "web-a"}
    assert [r.name for r in _view(fleet, sort="utilisation", reverse=True).rows] == by_use[::-1]
    assert next(r.name for r in _view(fleet, sort="age").rows) == "loose"
    with pytest.raises(ValueError, match="sort"):
        _view(fleet, sort="price")


def test_filter_by_utilisation_and_cost() -> None:
    fleet = _fleet()
    underused = _view(fleet, filter=Filter(utilisation_below=0.25))
    assert [r.name for r in underused.rows] == ["batch-b", "loose", "web-b"]
    assert underused.filter.describe() == "utilisation < 25%"
    dear = _view(fleet, filter=Filter(cost_above=0.1))
    assert [r.name for r in dear.rows] == ["batch-b", "loose", "web-a", "web-b"]  # not the spot one
    both = Filter(nodepools=frozenset({"web"}), utilisation_below=0.5, cost_above=0.1)
    assert [r.name for r in _view(fleet, filter=both).rows] == ["web-b"]


def test_watch_events_change_the_rows() -> None:
    fleet = _fleet()
    before = fleet.version
    kind, extra = worker("w4", "500m", "web-b")
    fleet.apply(kind, "ADDED", extra)
    assert fleet.version == before + 1
    rows = {r.name: r for r in _view(fleet).rows}
    assert rows["web-b"].cpu_requested == 1000 and rows["web-b"].pods == 2
    fleet.apply("nodes", DELETED, {"metadata": {"name": "loose"}})
    assert "loose" not in {r.name for r in _view(fleet).rows}
    fleet.apply("nodes", DELETED, {"metadata": {"name": "loose"}})  # already gone: no change
    assert fleet.version == before + 2


@pytest.mark.parametrize(
    ("text", "labels", "matches"),
    [
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a in (x, y),b", {"a": "y", "b": ""}, True),
        ("a notin (x,y)", {"a": "x"}, False),
        ("!a", {"a": "x"}, False),
        ("!a, c=d", {"c": "d"}, True),
    ],
)
def test_label_selectors_in_kubectl_syntax(
    text: str, labels: dict[str, str], matches: bool
) -> None:
    assert parse_selector(text).matches(labels) is matches


@pytest.mark.parametrize("text", ["a in ()", "a=b=c", "(x)"])
def test_a_bad_selector_is_named(text: str) -> None:
    with pytest.raises(SelectorError, match="label selector"):
        parse_selector(text)


def test_the_table_names_rows_pools_and_cluster_totals() -> None:
    fleet = _fleet()
    bound, why = lower_bound(fleet.listed())
    assert why is None and bound is not None and 0 < bound <= 0.3
    view = _view(fleet, lower_bound=bound)
    text = render_table(view)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["NODE", "NODEPOOL", "INSTANCE"]
    assert any(line.startswith("batch-a") and "Ready,drifted,expiring" in line for line in lines)
    assert any(line.startswith("web ") and "status" in line for line in lines)
    assert lines[-1].startswith("cluster: 5 nodes")
    assert f"${bound:.4f}/h" in lines[-1]


def test_bars_and_ages() -> None:
    assert bar(0.0, 4) == "····" and bar(1.5, 4) == "████"
    assert bar(0.5, 4) == "██··"
    assert len(bar(0.33, 10)) == 10
    ages = [timedelta(seconds=45), timedelta(minutes=12), timedelta(hours=5), timedelta(days=3)]
    assert [age_text(a) for a in ages] == ["45s", "12m", "5h", "3d"]
    assert age_text(timedelta(hours=30)) == "30h" and age_text(None) == "-"


def _ec2_node(name: str, zone: str) -> JSON:
    """A node as Karpenter on EKS labels it (no karpy status anywhere)."""
    return node(
        name,
        labels={
            "karpenter.sh/nodepool": "default",
            "node.kubernetes.io/instance-type": "m5.large",
            "karpenter.sh/capacity-type": "on-demand",
            "topology.kubernetes.io/zone": zone,
        },
        status=node_status(ready=True, cpu="1930m", memory="7Gi"),
    )


def test_ec2_nodes_are_priced_from_the_snapshot_of_their_region() -> None:
    from karpy.cloudprovider.aws.snapshot import load_snapshot

    fleet = Fleet()
    fleet.apply("nodes", "ADDED", _ec2_node("oregon", "us-west-2b"))
    fleet.apply("nodes", "ADDED", _ec2_node("ireland", "eu-west-1a"))
    rows = {r.name: r for r in _view(fleet).rows}
    m5 = next(t for t in load_snapshot("us-west-2") if t.name == "m5.large")
    expected = next(
        o.price for o in m5.offerings if (o.zone, o.capacity_type) == ("us-west-2b", "on-demand")
    )
    assert rows["oregon"].price == pytest.approx(expected) and rows["oregon"].price_exact
    # no shipped snapshot for eu-west-1: the type's price elsewhere, marked as an estimate
    assert rows["ireland"].price is not None and not rows["ireland"].price_exact
    assert render_table(_view(fleet)).count("~") == 1
