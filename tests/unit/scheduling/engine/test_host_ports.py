"""Host ports DaemonSets take: a pending pod needing one cannot go to a node the DaemonSet runs
(or will run) on; conflicts follow kube-scheduler (an unset hostIP binds every address)."""

from __future__ import annotations

from typing import Any

from karpy.scheduling.engine.model import SchedulingInput, SchedulingResult
from karpy.scheduling.engine.scheduler import schedule
from karpy.scheduling.hostports import conflicts
from karpy.scheduling.pods import pod_view
from tests.unit.scheduling.engine.builders import node, raw_pod, template
from tests.unit.scheduling.engine.checker import check_plan


def with_port(raw: dict[str, Any], port: int, **extra: Any) -> dict[str, Any]:
    [c] = raw["spec"]["containers"]
    c["ports"] = [{"containerPort": port, "hostPort": port, **extra}]
    return raw


EXPORTER = with_port(raw_pod("exporter", tolerations=[{"operator": "Exists"}]), 9100)


def run(raws: list[dict[str, Any]], **kw: Any) -> SchedulingResult:
    inp = SchedulingInput(
        pods=[pod_view(r) for r in raws],
        templates=[template()],
        daemonset_pods=[pod_view(EXPORTER, daemon=True)],
        **kw,
    )
    result = schedule(inp)
    check_plan(inp, raws, result, raw_daemons=[EXPORTER])
    return result


def test_conflicts_follow_the_wildcard_address() -> None:
    any_tcp = {("0.0.0.0", "TCP", 9100)}
    assert conflicts({("10.0.0.1", "TCP", 9100)}, any_tcp)
    assert conflicts(any_tcp, {("10.0.0.1", "TCP", 9100)})
    assert not conflicts({("10.0.0.1", "TCP", 9100)}, {("10.0.0.2", "TCP", 9100)})
    assert not conflicts({("0.0.0.0", "UDP", 9100)}, any_tcp)
    assert not conflicts({("0.0.0.0", "TCP", 9101)}, any_tcp)
    assert not conflicts(set(), any_tcp)


def test_a_port_a_daemonset_takes_keeps_pods_off_new_nodes() -> None:
    clash = with_port(raw_pod("clash"), 9100, hostIP="10.0.0.1")
    udp = with_port(raw_pod("udp"), 9100, protocol="UDP")
    result = run([clash, udp])
    assert "host ports conflict" in result.errors["default/clash"]
    assert [p.name for c in result.node_claims for p in c.pods] == ["udp"]


def test_a_port_a_daemonset_will_take_keeps_pods_off_existing_nodes() -> None:
    # n0 does not run the exporter yet (just registered, or in flight): it will
    clash = with_port(raw_pod("clash"), 9100)
    plain = raw_pod("plain")
    result = run([clash, plain], existing_nodes=[node("n0")])
    assert {p.name for p in result.existing.get("n0", [])} == {"plain"}
    assert "default/clash" in result.errors
    assert not result.node_claims
