"""End to end with a real Prometheus (built by hack/prometheus/build.sh): it scrapes `karpy run`
every second while a workload scales up, is consolidated and scales down, then

- every query of every panel of the chart's three dashboards, and every query of Karpenter's
  own two dashboards (`KARPENTER_QUERIES`, verbatim, with their source), returns data through
  Prometheus's HTTP API, Grafana's variables replaced as `VARIABLES` says. The few queries the
  kwok scenario cannot fill are listed with the reason in `NO_DATA_HERE`, and the "Min" series
  that Prometheus computes as NaN by definition in `NAN_BY_DEFINITION`: both must still match
  a query (a stale entry fails the test);
- the chart's alert rules pass `promtool check rules`, and the alerts whose condition the
  scenario makes true fire: pods only a NodePool without its NodeClass could take
  (KarpenterPodsUnschedulable), launches the cloud provider refuses at first
  (KarpenterNodeClaimsNotLaunching, KarpenterCloudProviderErrors), an empty node behind a
  budget of 0 (KarpenterDisruptionBudgetsBlocking, never for the NodePool without nodes) and,
  once karpy stops, KarpenterNotLeading; and, in a second test, the AWS provider (against
  moto) polling an interruption queue that does not exist yet
  (KarpenterInterruptionQueueErrors), then handling a message from it: the karpy dashboard's
  interruption panel, which the kwok provider cannot fill.
"""

# Karpenter's queries are kept verbatim, one string each, however long.
# ruff: noqa: E501

from __future__ import annotations

import json
import math
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from kubetest import Kubectl
from moto.server import ThreadedMotoServer

from tests.e2e.conftest import KarpyFactory, PoolFactory
from tests.e2e.faulty_karpy import FAULTS_ENV
from tests.e2e.karpy_process import REPO, KarpyProcess
from tests.e2e.prometheus import PrometheusServer, prometheus_bin_dir, promtool_check_rules
from tests.e2e.support import deployment, pool_nodes, scale, wait_bound, wait_for
from tests.e2e.test_aws import CREDENTIALS, REGION, _lower
from tests.kit import nodepool
from tests.kit.interruption import body, spot_interruption

pytestmark = pytest.mark.timeout(900)

CHART = REPO / "manifests" / "charts" / "karpy"
DASHBOARDS = CHART / "monitoring" / "dashboards"
POOL = "prom"
ORPHAN = "prom-orphan"
RATE = "20s"
# The first creates fail at the provider seam, each retried with the NodeClaim's backoff
# (5 ms doubling): 11 failures per NodeClaim last about 5 s, the last ones more than a scrape
# apart, so the errors counter grows between scrapes (rate > 0), the launch alerts' condition.
CREATE_ERRORS = 22
BUDGETS_ALERT = "KarpenterDisruptionBudgetsBlocking"
QUEUE = "interruptions"

# Grafana's variables: every label filter matches all, the distribution is by NodePool, and
# the reconcile-latency panel looks at the provisioner (Karpenter v1's name for it).
VARIABLES = {
    "$__rate_interval": RATE,
    "$distribution_filter": "nodepool",
    "$controller": "provisioner",
    "$nodepool": ".*",
    "$zone": ".*",
    "$arch": ".*",
    "$capacity_type": ".*",
    "$instance_type": ".*",
}

_CAPACITY = (
    "aws/karpenter-provider-aws website/content/en/docs/getting-started/"
    "getting-started-with-karpenter/karpenter-capacity-dashboard.json "
    "(Karpenter Capacity v1, commit 160b0bc3d0e7f0bd465640f9c4ef587f00e2d5b4)"
)
_PERFORMANCE = (
    "aws/karpenter-provider-aws website/content/en/docs/getting-started/"
    "getting-started-with-karpenter/karpenter-performance-dashboard.json "
    "(commit a1d200bb96b1516fb5a4f4144d6061bb967fa0ed)"
)
_SEL = (
    'arch=~"$arch",capacity_type=~"$capacity_type",instance_type=~"$instance_type",'
    'nodepool=~"$nodepool",zone=~"$zone"'
)
# Karpenter's two dashboards, query for query: (source, panel title, PromQL as upstream writes it).
KARPENTER_QUERIES: list[tuple[str, str, str]] = [
    *(
        (_CAPACITY, title, expr)
        for title, expr in [
            (
                "Nodes Created by nodepool",
                'sum(rate(karpenter_nodes_created_total{nodepool=~"$nodepool"}[$__rate_interval])) by(cluster,nodepool)',
            ),
            (
                "Nodes Created by nodepool",
                'sum by(cluster,nodepool) (karpenter_nodes_created_total{nodepool=~"$nodepool"})',
            ),
            (
                "Nodes Terminated by nodepool",
                'sum(rate(karpenter_nodes_terminated_total{nodepool=~"$nodepool"}[$__rate_interval])) by(cluster,nodepool)',
            ),
            (
                "Nodes Terminated by nodepool",
                'sum by(cluster,nodepool) (karpenter_nodes_terminated_total{nodepool=~"$nodepool"})',
            ),
            (
                'Nodes Eligibale for Disruptions by "reason"',
                "sum by(reason)(karpenter_voluntary_disruption_eligible_nodes)",
            ),
            (
                'Node Disruptions by "$distribution_filter"',
                'sum(rate(karpenter_nodeclaims_disrupted_total{nodepool=~"$nodepool"}[$__rate_interval])) by(cluster,nodepool)',
            ),
            (
                'Node Disruptions by "$distribution_filter"',
                'sum by(cluster,nodepool)(karpenter_nodeclaims_disrupted_total{nodepool=~"$nodepool"})',
            ),
            (
                'Disruption Actions performed by "type" and "decision"',
                "sum(rate(karpenter_voluntary_disruption_decisions_total[$__rate_interval])) by(cluster,nodepool,consolidation_type,decision)",
            ),
            (
                'Disruption Actions performed by "type" and "decision"',
                "sum by(consolidation_type,decision)(karpenter_voluntary_disruption_decisions_total)",
            ),
            (
                'Pod Distribution by "$distribution_filter"',
                'sum by ($distribution_filter)(\n    karpenter_pods_state{arch=~"$arch", capacity_type=~"$capacity_type", instance_type=~"$instance_type", nodepool=~"$nodepool"}\n)',
            ),
            ("Pod Phase", "sum by(phase)(karpenter_pods_state)"),
            (
                "Nodepool Summary",
                'karpenter_nodepools_usage{resource_type="cpu"} / karpenter_nodepools_limit{resource_type="cpu"}',
            ),
            (
                "Nodepool Summary",
                'count by (nodepool)(karpenter_nodes_allocatable{nodepool!="N/A",resource_type="cpu"}) # Selects a single resource type to get node count',
            ),
            (
                "Nodepool Summary",
                'karpenter_nodepools_usage{resource_type="memory"} / karpenter_nodepools_limit{resource_type="memory"}',
            ),
            (
                "Nodepool Summary",
                'sum by (nodepool)(karpenter_nodes_allocatable{nodepool!="N/A",resource_type="cpu"})',
            ),
            (
                "Nodepool Summary",
                'sum by (nodepool)(karpenter_nodes_allocatable{nodepool!="N/A",resource_type="memory"})',
            ),
            (
                "Spot Node Percentage",
                '(count(karpenter_nodes_allocatable{arch=~"$arch",capacity_type="spot",instance_type=~"$instance_type",nodepool=~"$nodepool",zone=~"$zone"}) or vector(0)) / count(karpenter_nodes_allocatable{arch=~"$arch",instance_type=~"$instance_type",nodepool=~"$nodepool",zone=~"$zone"})',
            ),
            *(
                (
                    "Node Summary",
                    f'((karpenter_nodes_total_daemon_requests{{resource_type="{r}",{_SEL}}} or karpenter_nodes_allocatable*0) + \n'
                    f'(karpenter_nodes_total_pod_requests{{resource_type="{r}",{_SEL}}} or karpenter_nodes_allocatable*0)) / \n'
                    f'karpenter_nodes_allocatable{{resource_type="{r}",{_SEL}}}',
                )
                for r in ("cpu", "memory")
            ),
            (
                "Node Summary",
                f'karpenter_nodes_total_daemon_requests{{resource_type="pods",{_SEL}}} + \n'
                f'karpenter_nodes_total_pod_requests{{resource_type="pods",{_SEL}}}',
            ),
            (
                "Node Summary",
                'label_replace(\n    sum by (node)(node_time_seconds) - sum by (node)(node_boot_time_seconds),\n    "node_name", "$1", "node", "(.+)"\n)',
            ),
        ]
    ),
    *(
        (_PERFORMANCE, title, f'{metric}{{quantile="{q}"}}')
        for title, metric in [
            ("Node Termination Latency", "karpenter_nodes_termination_time_seconds"),
            ("Pod Startup Latency", "karpenter_pods_startup_time_seconds"),
        ]
        for q in ("0", "0.5", "0.9", "0.99", "1")
    ),
    *(
        (
            _PERFORMANCE,
            "Controller Reconciliation Latency [$controller]",
            f'histogram_quantile({q}, rate(controller_runtime_reconcile_time_seconds_bucket{{controller="$controller"}}[10m]))',
        )
        for q in ("0", "0.5", "0.9", "0.99", "1")
    ),
    (
        _PERFORMANCE,
        "Controller Reconciliation Rate",
        "sum(rate(controller_runtime_reconcile_total[10m])) by (controller)",
    ),
]
# Rewrites of Karpenter's queries, each with its reason; nothing else is changed.
KARPENTER_REWRITES = {
    # The stored Performance dashboard still names the v0.x summaries; Karpenter v1 renamed them
    # (docs/reference/metrics.md), and neither Karpenter v1 nor karpy exports the old names.
    "karpenter_nodes_termination_time_seconds": "karpenter_nodes_termination_duration_seconds",
    "karpenter_pods_startup_time_seconds": "karpenter_pods_startup_duration_seconds",
    # Prometheus 3 stores a scraped summary's quantile="0" and "1" as "0.0" and "1.0", whatever
    # the exporter (Go's client included), so panels written for Prometheus 2 ask in that form
    # here; karpy's own dashboard matches both.
    'quantile="0"': 'quantile="0.0"',
    'quantile="1"': 'quantile="1.0"',
}
INTERRUPTION_PANEL = ("karpy", "Interruption handling latency")
# Queries that cannot have data in this scenario: (dashboard or upstream file, panel title,
# the start of the query or "" for all of the panel's) -> why.
NO_DATA_HERE: dict[tuple[str, str, str], str] = {
    (*INTERRUPTION_PANEL, ""): (
        "interruption messages come from the AWS provider's SQS queue; the kwok provider has "
        "none (test_interruption_queue_alert_and_panel checks the panel with the AWS provider)"
    ),
    ("karpenter-capacity-dashboard.json", "Node Summary", "label_replace("): (
        "Uptime queries node-exporter's node_time_seconds and node_boot_time_seconds, which "
        "karpy does not export and no node-exporter runs on simulated nodes"
    ),
}
# Queries whose every value is NaN by definition: they must return series (the metric and
# labels match), but not numbers.
NAN_BY_DEFINITION: dict[str, str] = {
    "histogram_quantile(0,": (
        "the 0-quantile of a classic histogram interpolates inside the lowest bucket from 0, "
        "which is 0/0 when that bucket (5 ms) saw no reconcile in the window; the Min series "
        "is blank for Karpenter as for karpy"
    ),
}


def _substitute(expr: str, rewrites: dict[str, str] | None = None) -> str:
    for old, new in (rewrites or {}).items():
        expr = expr.replace(old, new)
    for name in sorted(VARIABLES, key=len, reverse=True):
        expr = expr.replace(name, VARIABLES[name])
    assert "$" not in expr.replace('"$1"', ""), f"unreplaced variable in {expr}"
    return expr


def _queries() -> list[tuple[str, str, str]]:
    """(dashboard, panel title, PromQL ready to run) of every panel target of the chart's
    dashboards and of Karpenter's."""
    out = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        dashboard = json.loads(path.read_text())
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                out.append((dashboard["title"], panel["title"], _substitute(target["expr"])))
    for source, title, expr in KARPENTER_QUERIES:
        where = source.split()[1].rsplit("/", 1)[-1]
        out.append((where, title, _substitute(expr, KARPENTER_REWRITES)))
    return out


def _excused(dashboard: str, title: str, expr: str) -> bool:
    return any(
        (dashboard, title) == (d, t) and expr.startswith(prefix) for d, t, prefix in NO_DATA_HERE
    )


def _budgets(kubectl: Kubectl, pool: str, nodes: str) -> None:
    patch = {"spec": {"disruption": {"budgets": [{"nodes": nodes}]}}}
    kubectl("patch", "nodepool", pool, "--type=merge", f"--patch={json.dumps(patch)}")


def _numbers(result: list[dict[str, Any]]) -> bool:
    """Some series with some number (NaN, which Grafana draws as nothing, does not count)."""
    for series in result:
        values = series.get("values") or [series["value"]]
        if any(not math.isnan(float(v[1])) for v in values):
            return True
    return False


def _rendered_rules(tmp_path: Path) -> list[dict[str, Any]]:
    """The chart's PrometheusRule groups, with short `for`s so the test sees alerts fire."""
    helm = (
        subprocess.run(
            [str(REPO / "hack" / "helm" / "build.sh")], capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    values = {
        "provider": "kwok",
        "prometheusRule": {
            "enabled": True,
            "unschedulableFor": "5s",
            "errorsFor": "1s",
            "notLeadingFor": "5s",
            "budgetsBlockingFor": "5s",
            "window": "2m",
        },
    }
    (tmp_path / "values.json").write_text(json.dumps(values))
    out = subprocess.run(
        [helm, "template", "karpy", str(CHART), "-f", str(tmp_path / "values.json")],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    ).stdout
    [rule] = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "PrometheusRule"]
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    return groups


@pytest.fixture
def prometheus_dir() -> Path:
    """Prometheus and promtool, built the first time a test needs them."""
    return prometheus_bin_dir()


@pytest.fixture
def server(
    prometheus_dir: Path, karpy_factory: KarpyFactory, tmp_path: Path
) -> Iterator[tuple[PrometheusServer, KarpyProcess]]:
    karpy = karpy_factory(
        {FAULTS_ENV: f"create-error={CREATE_ERRORS}", "DISABLE_LEADER_ELECTION": "false"}
    )
    groups = _rendered_rules(tmp_path)
    prom = PrometheusServer(
        workdir=tmp_path / "prometheus",
        targets=[f"127.0.0.1:{karpy.metrics_port}"],
        rule_groups=groups,
    ).start()
    try:
        yield prom, karpy
    finally:
        prom.stop()


def test_dashboards_and_alerts_against_a_real_prometheus(
    server: tuple[PrometheusServer, KarpyProcess],
    kubectl: Kubectl,
    namespace: str,
    kwok_pool: PoolFactory,
    tmp_path: Path,
) -> None:
    prom, karpy = server
    started = time.monotonic()
    queries = _queries()
    for d, t, prefix in NO_DATA_HERE:
        assert any((qd, qt) == (d, t) and e.startswith(prefix) for qd, qt, e in queries), (
            f"stale NO_DATA_HERE entry {(d, t, prefix)}"
        )
    for prefix in NAN_BY_DEFINITION:
        assert any(e.startswith(prefix) for _, _, e in queries), f"stale {prefix}"
    check = promtool_check_rules(tmp_path / "prometheus" / "rules.yaml")
    assert check.returncode == 0, check.stdout + check.stderr
    wait_for(prom.targets_up, timeout=60, message="Prometheus scrapes karpy")

    kwok_pool(
        POOL,
        limits={"cpu": "64", "memory": "256Gi"},
        consolidate_after="2s",
        policy="WhenEmptyOrUnderutilized",
        budgets=[{"nodes": "100%"}],
    )
    # a NodePool whose NodeClass does not exist, and a pod only it could take
    kubectl.apply(nodepool(ORPHAN, nodeclass="no-such-nodeclass"))
    kubectl.apply(
        deployment(
            "stranded",
            namespace,
            replicas=1,
            cpu="100m",
            memory="64Mi",
            node_selector={"karpenter.sh/nodepool": ORPHAN},
        )
    )
    # scale up: a large node for "big" and room for "web"; the first launches fail
    kubectl.apply(deployment("big", namespace, replicas=3, cpu="3", memory="1Gi"))
    kubectl.apply(deployment("web", namespace, replicas=2, cpu="500m", memory="512Mi"))
    wait_bound(kubectl, namespace, 5, selector="app in (big,web)", timeout=300)

    seen: dict[str, str] = {}
    blocked_pools: set[str] = set()

    def firing(*names: str) -> bool:
        for alert in prom.active_alerts():
            name = alert["labels"]["alertname"]
            if name == BUDGETS_ALERT:
                blocked_pools.add(alert["labels"].get("nodepool", ""))
            if seen.get(name) != "firing":
                seen[name] = alert["state"]
        return all(seen.get(n) == "firing" for n in names)

    # the failed launches are inside the rules' 2m window, the stranded pod waits past 5s
    wait_for(
        lambda: firing(
            "KarpenterPodsUnschedulable",
            "KarpenterNodeClaimsNotLaunching",
            "KarpenterCloudProviderErrors",
        ),
        timeout=90,
        message="alerts firing",
    )
    assert "KarpenterNotLeading" not in prom.alerts(), "karpy leads"

    # consolidate: the large node is left underused (replaced or deleted with a saving)
    scale(kubectl, namespace, "big", 0)

    def consolidated() -> bool:
        return _numbers(prom.query("sum(karpy_disruption_savings_total) > 0")) and _numbers(
            prom.query("sum(karpenter_nodes_terminated_total) > 0")
        )

    wait_for(consolidated, timeout=300, message="a consolidation with a saving")
    # scale down, first behind a budget that allows nothing: the empty node is eligible but
    # blocked; the NodePool without nodes (ORPHAN, whose 10% budget allows 0) is not reported
    _budgets(kubectl, POOL, "0")
    scale(kubectl, namespace, "web", 0)

    def blocked() -> bool:
        firing()
        return any(
            a["labels"]["alertname"] == BUDGETS_ALERT
            and a["labels"].get("nodepool") == POOL
            and a["state"] == "firing"
            for a in prom.active_alerts()
        )

    wait_for(blocked, timeout=120, message=f"{BUDGETS_ALERT} for {POOL}")
    _budgets(kubectl, POOL, "100%")
    wait_for(lambda: not pool_nodes(kubectl, POOL), timeout=180, message="the pool empties")
    assert ORPHAN not in blocked_pools, f"{BUDGETS_ALERT} for a NodePool without nodes"

    def unanswered() -> list[str]:
        window = time.monotonic() - started + 5
        out = []
        for dashboard, title, expr in queries:
            if _excused(dashboard, title, expr):
                continue
            result = prom.query_range(expr, window)
            nan_ok = any(expr.startswith(p) for p in NAN_BY_DEFINITION)
            if not (result if nan_ok else _numbers(result)):
                out.append(f"{dashboard} / {title}: {expr}")
        return out

    try:
        wait_for(lambda: not unanswered(), timeout=120, message="every panel query has data")
    except AssertionError:
        pytest.fail("queries without data:\n" + "\n".join(unanswered()))

    karpy.stop()
    wait_for(lambda: firing("KarpenterNotLeading"), timeout=60, message="no-leader alert")


def _reset(endpoint: str) -> None:
    request = urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


@pytest.fixture
def moto() -> Iterator[str]:
    """A moto server from a clean state, left clean (servers in one process share moto's
    backends, so this test's queue would outlive it)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    _reset(endpoint)
    try:
        yield endpoint
    finally:
        _reset(endpoint)
        server.stop()


# The interruption panel's query that the AWS test cannot fill either -> why.
NO_DATA_WITH_AWS: dict[tuple[str, str, str], str] = {
    (*INTERRUPTION_PANEL, "sum by (action_type)"): (
        "an action needs a NodeClaim on an EC2 instance, which needs the simulated kubelets "
        "(tests/e2e/test_aws_interruption.py covers karpenter_interruption_actions_performed_total)"
    ),
}


def test_interruption_queue_alert_and_panel(
    prometheus_dir: Path, karpy_factory: KarpyFactory, moto: str, tmp_path: Path
) -> None:
    """The AWS provider with an interruption queue that does not exist yet: every GetQueueUrl
    fails, retried after 1 s, 2 s, 4 s..., so the error counter grows between scrapes and
    KarpenterInterruptionQueueErrors fires. Then the queue appears, karpy's next retry finds
    it and handles a spot interruption warning, and the karpy dashboard's interruption panel
    has data."""
    started = time.monotonic()
    karpy = karpy_factory(
        {
            "PROVIDER": "aws",
            "CLUSTER_NAME": "demo",
            "CLUSTER_ENDPOINT": "https://127.0.0.1:6443",  # no EKS cluster to discover
            "INTERRUPTION_QUEUE": QUEUE,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": moto,
            "AWS_CONFIG_FILE": "/dev/null",
            **CREDENTIALS,
        }
    )
    prom = PrometheusServer(
        workdir=tmp_path / "prometheus",
        targets=[f"127.0.0.1:{karpy.metrics_port}"],
        rule_groups=_rendered_rules(tmp_path),
    ).start()
    try:
        wait_for(
            lambda: prom.alerts().get("KarpenterInterruptionQueueErrors") == "firing",
            timeout=60,
            message="KarpenterInterruptionQueueErrors firing",
        )
        sqs = boto3.client("sqs", endpoint_url=moto, region_name=REGION, **_lower(CREDENTIALS))
        url = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody=body(spot_interruption("i-0123456789abcdef0")))
        panel = [
            expr
            for dashboard, title, expr in _queries()
            if (dashboard, title) == INTERRUPTION_PANEL
            and not any(expr.startswith(prefix) for _, _, prefix in NO_DATA_WITH_AWS)
        ]
        assert len(panel) == 2, panel

        def unanswered() -> list[str]:
            window = time.monotonic() - started + 5
            return [e for e in panel if not _numbers(prom.query_range(e, window))]

        try:
            wait_for(lambda: not unanswered(), timeout=120, message="the interruption panel")
        except AssertionError:
            pytest.fail("queries without data:\n" + "\n".join(unanswered()))
    finally:
        prom.stop()
