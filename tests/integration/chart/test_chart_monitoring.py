"""The chart's monitoring objects: `dashboards.enabled` renders one ConfigMap per dashboard
labelled for Grafana's sidecar, `prometheusRule.enabled` a PrometheusRule with karpy's alerts and
the thresholds from values; with both off (the default) neither is rendered."""

from __future__ import annotations

import json

from tests.integration.chart.chart_support import CHART, Helm, one

DASHBOARDS = {
    "karpenter-capacity.json": "Karpenter Capacity",
    "karpenter-performance.json": "Karpenter Performance",
    "karpy.json": "karpy",
}
ALERTS = {
    "KarpenterPodsUnschedulable",
    "KarpenterNodeClaimsNotLaunching",
    "KarpenterCloudProviderErrors",
    "KarpenterInterruptionQueueErrors",
    "KarpenterDisruptionBudgetsBlocking",
    "KarpenterNotLeading",
}


def test_nothing_rendered_by_default(helm: Helm) -> None:
    docs = helm.template({"provider": "kwok"})
    assert not [d for d in docs if d["kind"] in {"PrometheusRule"}]
    assert not [
        d
        for d in docs
        if d["kind"] == "ConfigMap" and "grafana_dashboard" in d["metadata"].get("labels", {})
    ]


def test_dashboards_render_as_sidecar_configmaps(helm: Helm) -> None:
    docs = helm.template(
        {
            "provider": "kwok",
            "dashboards": {"enabled": True, "annotations": {"grafana_folder": "K"}},
        }
    )
    maps = [d for d in docs if d["kind"] == "ConfigMap"]
    assert len(maps) == len(DASHBOARDS)
    titles = {}
    for cm in maps:
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert cm["metadata"]["namespace"] == "kube-system"
        assert cm["metadata"]["annotations"] == {"grafana_folder": "K"}
        ((key, text),) = cm["data"].items()
        assert text == (CHART / "monitoring" / "dashboards" / key).read_text().rstrip("\n")
        dashboard = json.loads(text)
        titles[key] = dashboard["title"]
        exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
        assert exprs and all(exprs)
    assert titles == DASHBOARDS


def test_prometheus_rule_renders_every_alert_with_values(helm: Helm) -> None:
    docs = helm.template(
        {
            "provider": "kwok",
            "prometheusRule": {
                "enabled": True,
                "additionalLabels": {"release": "kube-prometheus-stack"},
                "unschedulableFor": "7m",
                "budgetsBlockingFor": "5h",
            },
        }
    )
    rule = one(docs, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    rules = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    assert set(rules) == ALERTS
    assert rules["KarpenterPodsUnschedulable"]["for"] == "7m"
    assert rules["KarpenterDisruptionBudgetsBlocking"]["for"] == "5h"
    # Prometheus's own templates pass through helm untouched
    assert "{{ $value }}" in rules["KarpenterPodsUnschedulable"]["annotations"]["description"]
    assert all(r["expr"].strip() for r in rules.values())
