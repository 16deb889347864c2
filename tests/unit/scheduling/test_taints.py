"""Tolerations match taints as kube-scheduler matches them."""

from __future__ import annotations

import pytest

from karpy.scheduling.taints import Taint, TaintError, Toleration, untolerated

NS = "NoSchedule"


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        (Toleration(key="a", value="1", effect=NS), Taint("a", NS, "1"), True),
        (Toleration(key="a", value="2", effect=NS), Taint("a", NS, "1"), False),
        (Toleration(key="a", operator="Exists"), Taint("a", "NoExecute", "x"), True),
        (Toleration(key="a", operator="Exists", effect="NoExecute"), Taint("a", NS), False),
        (Toleration(operator="Exists"), Taint("anything", "PreferNoSchedule", "v"), True),
        (Toleration(key="", operator="Equal"), Taint("a", NS), False),
        (Toleration(key="b", operator="Exists"), Taint("a", NS), False),
        (Toleration(key="sla", operator="Gt", value="900"), Taint("sla", NS, "950"), True),
        (Toleration(key="sla", operator="Gt", value="900"), Taint("sla", NS, "850"), False),
        (Toleration(key="sla", operator="Lt", value="900"), Taint("sla", NS, "850"), True),
        (Toleration(key="sla", operator="Lt", value="900"), Taint("sla", NS, "high"), False),
        (Toleration(key="a", value=""), Taint("a", NS), True),
    ],
)
def test_toleration_matching(toleration: Toleration, taint: Taint, tolerated: bool) -> None:
    assert toleration.tolerates(taint) is tolerated


def test_untolerated_names_the_first_taint_left() -> None:
    taints = [Taint("a", NS), Taint("b", NS, "x")]
    assert untolerated(taints, [Toleration(key="a", operator="Exists")]) == taints[1]
    assert untolerated(taints, [Toleration(operator="Exists")]) is None
    assert str(taints[1]) == "b=x:NoSchedule"


def test_bad_taints_and_tolerations_name_the_field() -> None:
    with pytest.raises(TaintError, match=r"taint\.effect"):
        Taint.from_dict({"key": "a", "effect": "Sometimes"})
    with pytest.raises(TaintError, match=r"spec.tolerations\[0\]\.operator"):
        Toleration.from_dict({"key": "a", "operator": "Maybe"}, field="spec.tolerations[0]")
