"""Preferences count as required until relaxed, one at a time, in Karpenter's order."""

from __future__ import annotations

from typing import Any

from karpy.scheduling.engine.preferences import Constraints, Preferences
from karpy.scheduling.pods import PodView
from tests.unit.scheduling.engine.builders import HOSTNAME, ZONE, pod, spread

PNS = "PreferNoSchedule"


def _term(key: str, value: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}


def _pod_term(key: str, labels: dict[str, str], weight: int = 1) -> dict[str, Any]:
    return {
        "weight": weight,
        "podAffinityTerm": {"topologyKey": key, "labelSelector": {"matchLabels": labels}},
    }


def _choosy() -> PodView:
    return pod(
        "choosy",
        labels={"app": "choosy"},
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [_term(ZONE, "test-zone-a"), _term(ZONE, "test-zone-b")]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": _term("disk", "ssd")}
                ],
            },
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [_pod_term(ZONE, {"app": "db"})]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    _pod_term(HOSTNAME, {"app": "choosy"})
                ]
            },
        },
        topologySpreadConstraints=spread(ZONE, {"app": "choosy"}, when="ScheduleAnyway"),
    )


def _state(eff: Constraints) -> tuple[str, bool, int, int, int, bool]:
    """(required zone, prefers ssd, affinities, anti-affinities, spreads, tolerates PNS)"""
    (alt,) = eff.alternatives
    zone = alt.get(ZONE)
    disk = alt.get("disk")
    return (
        ",".join(sorted(zone.values)) if zone is not None else "",
        disk is not None and disk.has("ssd"),
        len(eff.affinity),
        len(eff.anti),
        len(eff.spreads),
        any(t.effect == PNS for t in eff.tolerations),
    )


def test_relaxation_follows_karpenters_order() -> None:
    prefs = Preferences(_choosy(), ignore=False)
    steps = [_state(prefs.effective())]
    while prefs.relax(prefer_no_schedule_pools=True):
        steps.append(_state(prefs.effective()))
    assert steps == [
        ("test-zone-a", True, 1, 1, 1, False),  # everything counts as required
        ("test-zone-b", True, 1, 1, 1, False),  # the next required node term
        ("test-zone-b", True, 0, 1, 1, False),  # preferred pod affinity dropped
        ("test-zone-b", True, 0, 0, 1, False),  # preferred anti-affinity dropped
        ("test-zone-b", False, 0, 0, 1, False),  # preferred node term dropped
        ("test-zone-b", False, 0, 0, 0, False),  # ScheduleAnyway spread dropped
        ("test-zone-b", False, 0, 0, 0, True),  # PreferNoSchedule taints tolerated last
    ]


def test_prefer_no_schedule_is_only_relaxed_when_a_pool_has_such_a_taint() -> None:
    prefs = Preferences(pod("plain"), ignore=False)
    assert not prefs.relax(prefer_no_schedule_pools=False)
    assert prefs.relax(prefer_no_schedule_pools=True)
    assert _state(prefs.effective())[-1]
    assert not prefs.relax(prefer_no_schedule_pools=True)


def test_ignored_preferences_are_never_required() -> None:
    prefs = Preferences(_choosy(), ignore=True)
    assert _state(prefs.effective()) == ("test-zone-a", False, 0, 0, 0, True)
    assert prefs.relax(prefer_no_schedule_pools=True)  # the second required term is still tried
    assert not prefs.relax(prefer_no_schedule_pools=True)


def test_each_step_is_a_distinct_key() -> None:
    prefs = Preferences(_choosy(), ignore=False)
    first, second = prefs.effective(), prefs.effective()
    assert first is not second and len({first, second}) == 2  # caches key on the step
