"""Property: every plan the scheduler returns is feasible, judged by the independent checker."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karpy.scheduling.engine import exact, warm_up
from karpy.scheduling.engine.model import SchedulingInput, SchedulingResult
from karpy.scheduling.engine.scheduler import schedule
from karpy.scheduling.pods import pod_view
from tests.unit.scheduling.engine.builders import (
    ARCH,
    CAPACITY_TYPE,
    HOSTNAME,
    ZONE,
    anti_affinity,
    kwok,
    node,
    raw_pod,
    spread,
    template,
)
from tests.unit.scheduling.engine.checker import check_plan

CPUS = ["100m", "250m", "500m", "1", "1500m", "3", "7"]
MEMS = ["64Mi", "256Mi", "1Gi", "2Gi", "6Gi", "20Gi"]
ZONES = ["test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d"]


def _types() -> list[Any]:
    wanted = {1, 2, 4, 8, 16}
    return [
        t
        for t in kwok()
        if t.name.endswith("-linux") and int(t.name.split("-")[1].rstrip("x")) in wanted
    ]


@st.composite
def pools(draw: st.DrawFn, index: int) -> Any:
    reqs: list[dict[str, Any]] = []
    if draw(st.booleans()):
        reqs.append(
            {"key": ARCH, "operator": "In", "values": [draw(st.sampled_from(["amd64", "arm64"]))]}
        )
    if draw(st.booleans()):
        reqs.append(
            {
                "key": CAPACITY_TYPE,
                "operator": "In",
                "values": [draw(st.sampled_from(["spot", "on-demand"]))],
            }
        )
    if draw(st.booleans()):
        zones = draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=4, unique=True))
        reqs.append({"key": ZONE, "operator": "In", "values": zones})
    taints = (
        [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if draw(st.booleans()) else []
    )
    limits = (
        {"cpu": draw(st.integers(min_value=4, max_value=80)) * 1000}
        if draw(st.booleans())
        else None
    )
    return template(
        f"pool-{index}",
        types=_types(),
        requirements=reqs,
        weight=draw(st.integers(min_value=0, max_value=3)),
        taints=taints,
        limits=limits,
        labels={"team": draw(st.sampled_from(["a", "b"]))},
    )


@st.composite
def workloads(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    n = draw(st.integers(min_value=1, max_value=10))
    app = {"app": f"w{index}"}
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    kind = draw(
        st.sampled_from(
            ["plain", "anti", "zone-spread", "host-spread", "zone-anti", "selector", "ports"]
        )
    )
    if kind == "anti":
        spec["affinity"] = anti_affinity(HOSTNAME, app)
    elif kind == "zone-spread":
        spec["topologySpreadConstraints"] = spread(ZONE, app, skew=draw(st.integers(1, 2)))
    elif kind == "host-spread":
        spec["topologySpreadConstraints"] = spread(HOSTNAME, app, skew=draw(st.integers(1, 3)))
    elif kind == "zone-anti":
        spec["affinity"] = anti_affinity(ZONE, app)
    elif kind == "selector":
        spec["nodeSelector"] = {
            draw(st.sampled_from([ARCH, "team"])): draw(
                st.sampled_from(["amd64", "arm64", "a", "b"])
            )
        }
    cpu = draw(st.sampled_from(CPUS))
    mem = draw(st.sampled_from(MEMS))
    out = []
    for i in range(n):
        raw = raw_pod(f"w{index}-{i}", cpu=cpu, memory=mem, labels=dict(app), **spec)
        if kind == "ports":
            raw["spec"]["containers"][0]["ports"] = [
                {"containerPort": 80, "hostPort": 9000 + index}
            ]
        out.append(raw)
    return out


@st.composite
def scenarios(
    draw: st.DrawFn,
) -> tuple[SchedulingInput, list[dict[str, Any]], list[dict[str, Any]]]:
    templates = [draw(pools(i)) for i in range(draw(st.integers(1, 2)))]
    raws: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 4))):
        raws.extend(draw(workloads(i)))
    daemons = [
        raw_pod(
            f"ds-{i}",
            cpu=draw(st.sampled_from(["50m", "200m"])),
            memory="64Mi",
            tolerations=[{"operator": "Exists"}] if draw(st.booleans()) else [],
        )
        for i in range(draw(st.integers(0, 2)))
    ]
    existing = []
    for i in range(draw(st.integers(0, 2))):
        bound = [pod_view(raw_pod(f"bound-{i}", cpu="500m", labels={"app": "w0"}))]
        existing.append(node(f"node-{i}", cpu=draw(st.sampled_from([1000, 4000])), pods_=bound))
    inp = SchedulingInput(
        pods=[pod_view(r) for r in raws],
        templates=templates,
        daemonset_pods=[pod_view(d, daemon=True) for d in daemons],
        existing_nodes=existing,
        min_values_policy=draw(st.sampled_from(["Strict", "BestEffort"])),
    )
    return inp, raws, daemons


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_every_plan_is_feasible(
    scenario: tuple[SchedulingInput, list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    inp, raws, daemons = scenario
    result = schedule(inp)
    check_plan(inp, raws, result, raw_daemons=daemons)
    assert result.cost >= result.lower_bound - 1e-6
    for why in result.errors.values():
        assert why


def _unhurried(inp: SchedulingInput) -> SchedulingResult | None:
    """A plan no clock cut, or None. The CPU budget runs out only on a starved thread (a long
    garbage collection, many neighbours on the core): such a run is tried again, at most
    twice."""
    for _ in range(3):
        result = schedule(inp)
        if "time limit" not in result.exact:
            return result
    return None


def test_the_same_input_gives_the_same_plan() -> None:
    # Only a time limit makes the exact planner's plan depend on load (its result says so); with
    # the default budget the deterministic work limits end the search first (those of the
    # exact planner and of the re-packing of not-modelled batches), so the plan must not vary.
    # A batch the work limits did not end within the budget on three tries is counted: a few
    # may be on a machine with dozens of processes per core, not most.
    warm_up()  # as the provisioner does at start: the solver's import is no batch's time
    cut: list[str] = []

    @settings(max_examples=25, deadline=None, database=None)
    @given(scenarios())
    def check(
        scenario: tuple[SchedulingInput, list[dict[str, Any]], list[dict[str, Any]]],
    ) -> None:
        inp, _raws, _daemons = scenario
        assert inp.exact_seconds == exact.TIME_BUDGET
        a, b = _unhurried(inp), _unhurried(inp)
        if a is None or b is None:
            cut.append(f"{len(inp.pods)} pods")
            return
        assert [sorted(p.key for p in c.pods) for c in a.node_claims] == [
            sorted(p.key for p in c.pods) for c in b.node_claims
        ]
        assert a.errors == b.errors

    check()
    assert len(cut) <= 3, f"the clock, not the work limits, ended these searches: {cut}"
