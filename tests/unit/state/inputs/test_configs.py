"""SchedulingConfigs in the engine's inputs: which templates a config constrains, when a NodePool
becomes unsatisfiable, the default config's parameters and spread constraints."""

from __future__ import annotations

from typing import Any

from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.scheduling.requirements import Requirements
from karpy.state.inputs import ClusterObjects, PodViews, build_input
from karpy.state.inputs.configs import (
    conflicts,
    constrain_templates,
    guardrails,
    nodepool_nodeclass,
    parameters,
    with_default_spread,
)
from tests.kit import nodepool, pod, schedulingconfig, served

JSON = dict[str, Any]
ARCH = "kubernetes.io/arch"
KWOK_DEFAULT = ("karpenter.kwok.sh", "KWOKNodeClass", "default")


def _reqs(*exprs: JSON) -> Requirements:
    return Requirements.from_node_selector_terms(exprs)


def _template(name: str, *exprs: JSON) -> NodePoolTemplate:
    return NodePoolTemplate(name=name, requirements=_reqs(*exprs))


def test_a_config_applies_to_its_nodeclass_or_to_all() -> None:
    everywhere, scoped = guardrails(  # by name
        [schedulingconfig("scoped"), schedulingconfig("everywhere", nodeclass=None)]
    )
    assert everywhere.name == "everywhere" and everywhere.nodeclass is None
    assert scoped.nodeclass == KWOK_DEFAULT
    assert scoped.applies_to(KWOK_DEFAULT)
    assert not scoped.applies_to(("karpenter.kwok.sh", "KWOKNodeClass", "other"))
    assert everywhere.applies_to(None) and everywhere.applies_to(KWOK_DEFAULT)
    # the legacy apiVersion form of a NodePool's nodeClassRef matches the same NodeClass
    legacy = nodepool()
    legacy["spec"]["template"]["spec"]["nodeClassRef"] = {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "name": "default",
    }
    assert nodepool_nodeclass(legacy) == KWOK_DEFAULT


def test_requirements_are_added_to_the_templates_of_the_nodeclass() -> None:
    rails = guardrails([schedulingconfig()])
    open_pool = _template("open", {"key": ARCH, "operator": "In", "values": ["amd64", "arm64"]})
    other = _template("other")
    kept, dropped = constrain_templates(
        [open_pool, other],
        {"open": KWOK_DEFAULT, "other": ("karpenter.kwok.sh", "KWOKNodeClass", "x")},
        rails,
    )
    assert dropped == {}
    by_name = {t.name: t for t in kept}
    assert by_name["open"].requirements[ARCH].values == frozenset({"amd64"})
    assert by_name["open"].requirements["karpenter.sh/capacity-type"].values == {"on-demand"}
    assert by_name["other"] is other


def test_an_unsatisfiable_nodepool_is_dropped_naming_config_and_key() -> None:
    rails = guardrails([schedulingconfig()])
    arm = _template("arm", {"key": ARCH, "operator": "In", "values": ["arm64"]})
    kept, dropped = constrain_templates([arm], {"arm": KWOK_DEFAULT}, rails)
    assert kept == []
    (conflict,) = dropped["arm"]
    assert (conflict.config, conflict.key) == ("default", ARCH)
    assert conflict.message().startswith(f'SchedulingConfig "default" makes key {ARCH} ')
    # DoesNotExist on the pool against In on the config leaves nothing either
    absent = _reqs({"key": ARCH, "operator": "DoesNotExist"})
    assert [c.key for c in conflicts(absent, KWOK_DEFAULT, rails)] == [ARCH]
    # a template label counts like a requirement
    labelled = NodePoolTemplate(name="l", labels={ARCH: "arm64"})
    assert [c.key for c in conflicts(labelled.node_requirements, KWOK_DEFAULT, rails)] == [ARCH]


def test_min_values_left_unmet_is_a_conflict() -> None:
    zones = "topology.kubernetes.io/zone"
    config = schedulingconfig(
        requirements=[{"key": zones, "operator": "In", "values": ["a", "b"], "minValues": 2}]
    )
    rails = guardrails([config])
    pool = _reqs({"key": zones, "operator": "In", "values": ["b", "c"]})
    (conflict,) = conflicts(pool, KWOK_DEFAULT, rails)
    assert conflict.key == zones and "minValues 2" in conflict.detail
    assert conflicts(_reqs({"key": zones, "operator": "Exists"}), KWOK_DEFAULT, rails) == []


def test_several_configs_all_apply() -> None:
    rails = guardrails(
        [
            schedulingconfig("arch"),
            schedulingconfig(
                "zone",
                nodeclass=None,
                requirements=[
                    {"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["z"]}
                ],
            ),
        ]
    )
    kept, _ = constrain_templates([_template("p")], {"p": KWOK_DEFAULT}, rails)
    assert set(kept[0].requirements) == {
        ARCH,
        "karpenter.sh/capacity-type",
        "topology.kubernetes.io/zone",
    }


def test_only_the_default_config_carries_parameters() -> None:
    assert (
        parameters([schedulingconfig("other", preferencePolicy="Ignore")]).preference_policy is None
    )
    params = parameters(
        [
            schedulingconfig(
                batchIdleDuration="3s",
                batchMaxDuration="1m",
                preferencePolicy="Ignore",
                minValuesPolicy="BestEffort",
            )
        ]
    )
    assert params.batch_idle is not None and params.batch_idle.total_seconds() == 3
    assert params.batch_max is not None and params.batch_max.total_seconds() == 60
    assert (params.preference_policy, params.min_values_policy) == ("Ignore", "BestEffort")
    assert parameters([]).batch_idle is None


def test_default_policies_win_over_the_settings() -> None:
    objects = ClusterObjects(
        pending=[], configs=[schedulingconfig(preferencePolicy="Ignore", requirements=[])]
    )
    built = build_input(objects, preference_policy="Respect", min_values_policy="BestEffort")
    assert built.input.preference_policy == "Ignore"
    assert built.input.min_values_policy == "BestEffort"  # not set on the config
    plain = build_input(ClusterObjects(pending=[]), preference_policy="Ignore")
    assert plain.input.preference_policy == "Ignore"


SPREAD = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone"}


def test_default_spread_goes_to_pods_without_their_own() -> None:
    plain = served(pod("web-0", labels={"app": "web"}))
    spread = with_default_spread(plain, [SPREAD])
    (constraint,) = spread["spec"]["topologySpreadConstraints"]
    assert constraint == {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    assert spread["metadata"]["resourceVersion"] != plain["metadata"]["resourceVersion"]
    assert "topologySpreadConstraints" not in plain["spec"]  # the input is not changed
    own = served(pod("own-0", labels={"app": "own"}))
    own["spec"]["topologySpreadConstraints"] = [
        {**SPREAD, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
    ]
    assert with_default_spread(own, [SPREAD]) is own
    assert with_default_spread(plain, []) is plain


def test_cached_views_follow_the_default_spread() -> None:
    """A pod viewed before the config existed is viewed again with the default spread, and
    again without it when the config goes (the view cache is keyed by resourceVersion)."""
    views = PodViews()
    raw = served(pod("web-0", labels={"app": "web"}))
    config = schedulingconfig(nodeclass=None, requirements=[], topologySpreadConstraints=[SPREAD])
    before = build_input(ClusterObjects(pending=[raw]), views=views).input.pods[0]
    during = build_input(ClusterObjects(pending=[raw], configs=[config]), views=views).input.pods[0]
    after = build_input(ClusterObjects(pending=[raw]), views=views).input.pods[0]
    assert before.spread == () and after.spread == ()
    assert [s.topology_key for s in during.spread] == ["topology.kubernetes.io/zone"]
