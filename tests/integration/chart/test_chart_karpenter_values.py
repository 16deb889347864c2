"""A Karpenter user's values file on karpy's chart: Karpenter v1.14.1's values.yaml (every key,
Karpenter's defaults; fixtures/) with seed 000's install flags renders objects named and
labelled as Karpenter's, with no empty nested objects, that the apiserver accepts (server-side
dry run); every one of its keys is a documented key of karpy's chart; gates karpy does not know
are left out of FEATURE_GATES and named in the install notes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubetest import Kubectl

from karpy.settings import FeatureGates
from tests.integration.chart.chart_support import CHART, JSON, REPO, Helm, container, one
from tests.integration.chart.test_chart_render import settings_of

FIXTURES = Path(__file__).parent / "fixtures"
KARPENTER_VALUES = FIXTURES / "karpenter-1.14.1-values.yaml"
DRIFT_VALUES = FIXTURES / "older-karpenter-drift-gate-values.yaml"
# seed 000's `helm install karpenter ... --namespace karpenter` flags
SEED_SETS = (
    "settings.clusterName=seed-cluster",
    "settings.interruptionQueue=seed-cluster",
    "controller.resources.requests.cpu=1",
    "controller.resources.requests.memory=1Gi",
)
KARPENTER_NAMED = {
    "ServiceAccount",
    "Deployment",
    "Service",
    "PodDisruptionBudget",
    "Role",
    "RoleBinding",
    "ClusterRoleBinding",
}
POD_LABELS = {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": "karpenter"}


def render(
    helm: Helm, namespace: str, *values: Path, sets: tuple[str, ...] = SEED_SETS
) -> list[JSON]:
    extra: list[str] = []
    for path in values:
        extra += ["-f", str(path)]
    return helm.template(namespace=namespace, sets=sets, extra=extra)


def empty_objects(node: Any, path: str = "") -> Iterator[str]:
    """Paths of every `{}` in an object (a list item's index in brackets)."""
    if isinstance(node, dict):
        if not node:
            yield path
        for key, value in node.items():
            yield from empty_objects(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from empty_objects(value, f"{path}[{index}]")


def key_paths(node: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key path of a values tree, maps descended into."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from key_paths(value, (*prefix, key))


def leaf_paths(node: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The key paths of a values tree's leaves (values that are not non-empty maps)."""
    for key, value in node.items():
        if isinstance(value, dict) and value:
            yield from leaf_paths(value, (*prefix, key))
        else:
            yield (*prefix, key)


def test_karpenters_values_render_named_and_labelled_as_karpenters(helm: Helm) -> None:
    docs = render(helm, "karpenter", KARPENTER_VALUES)
    kinds = {d["kind"] for d in docs}
    assert kinds >= KARPENTER_NAMED, kinds
    for doc in docs:
        meta = doc["metadata"]
        if meta.get("namespace") == "kube-system":
            # Karpenter's `-dns` Role and its binding: the kube-dns Service, read for cluster DNS
            assert meta["name"] == "karpenter-dns", (doc["kind"], meta["name"])
        elif doc["kind"] in KARPENTER_NAMED or (
            doc["kind"] == "ClusterRole" and "aggregate-to" not in json.dumps(meta["labels"])
        ):
            assert meta["name"] == "karpenter", (doc["kind"], meta["name"])
        assert meta["labels"].items() >= POD_LABELS.items(), doc["kind"]
    assert {d["metadata"]["name"] for d in docs if d["kind"] == "ClusterRole"} == {
        "karpenter",
        "karpenter-admin",
        "karpenter-edit",
    }

    deployment = one(docs, "Deployment")
    template = deployment["spec"]["template"]
    assert template["metadata"]["labels"] == POD_LABELS
    assert deployment["spec"]["selector"]["matchLabels"] == POD_LABELS
    assert template["spec"]["serviceAccountName"] == "karpenter"
    assert one(docs, "Service")["spec"]["selector"] == POD_LABELS
    binding = one(docs, "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "karpenter", "namespace": "karpenter"}
    ]

    # Karpenter's empty securityContext parts (and every other {}) are left out
    for doc in docs:
        assert not list(empty_objects(doc)), (doc["kind"], list(empty_objects(doc)))
    ctr = container(docs)
    assert {"appArmorProfile", "seLinuxOptions", "seccompProfile"}.isdisjoint(
        ctr["securityContext"]
    )
    assert ctr["securityContext"]["runAsNonRoot"] is True
    assert ctr["resources"] == {"requests": {"cpu": 1, "memory": "1Gi"}}
    # Karpenter's keys with their meaning
    pod = template["spec"]
    assert pod["schedulerName"] == "default-scheduler"
    assert pod["dnsPolicy"] == "ClusterFirst"
    assert "hostNetwork" not in pod and "initContainers" not in pod
    assert pod["topologySpreadConstraints"][0]["whenUnsatisfiable"] == "DoNotSchedule"
    # karpy's image, never Karpenter's (controller.image is accepted and ignored)
    assert ctr["image"].startswith("ghcr.io/karpy/karpy:")
    assert ctr["imagePullPolicy"] == "IfNotPresent"

    settings = settings_of(docs)
    assert settings.cluster_name == "seed-cluster"
    assert settings.aws.interruption_queue == "seed-cluster"
    assert settings.feature_gates == FeatureGates()


def test_every_karpenter_key_is_a_documented_chart_key() -> None:
    """Each key of Karpenter's values.yaml is in karpy's values.yaml, and is in the generated
    values table (itself or a documented map that holds it)."""
    ours = yaml.safe_load((CHART / "values.yaml").read_text())
    ours_paths = set(key_paths(ours))
    theirs = yaml.safe_load(KARPENTER_VALUES.read_text())
    missing = [".".join(p) for p in key_paths(theirs) if p not in ours_paths]
    # inside the maps whose content is the user's (affinity, nodeSelector, ...) any key goes
    free_form = {"affinity", "nodeSelector", "podSecurityContext", "strategy"}
    missing = [m for m in missing if m.split(".")[0] not in free_form]
    assert not missing, missing

    table = (CHART / "README.md").read_text()
    documented = {
        line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ")
    }
    for path in leaf_paths(theirs):
        prefixes = {".".join(path[:n]) for n in range(1, len(path) + 1)}
        if path[0] in free_form:
            continue
        assert prefixes & documented, ".".join(path)
    # and the ignored ones say so, with a reason
    rows = {
        line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")
    }
    for key in (
        "settings.eksControlPlane",
        "settings.ignoreDRARequests",
        "settings.disableDryRun",
        "settings.amiRefreshInterval",
        "settings.subnetRefreshInterval",
        "logOutputPaths",
        "logErrorOutputPaths",
        "controller.image.repository",
    ):
        assert "Accepted, ignored:" in rows[key], rows[key]


def test_the_values_docs_are_generated_from_values_yaml() -> None:
    """`make check-generated`'s check: README.md and docs/reference/helm-values.md hold the
    table generated from values.yaml as it is."""

    proc = subprocess.run(
        [sys.executable, str(REPO / "hack" / "chart_docs.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    page = (REPO / "docs" / "reference" / "helm-values.md").read_text()
    assert "| settings.featureGates.nodeRepair | bool | `false` |" in page


def test_unknown_feature_gates_are_left_out(helm: Helm) -> None:
    docs = render(helm, "karpenter", KARPENTER_VALUES, DRIFT_VALUES)
    env = {e["name"]: e.get("value") for e in container(docs)["env"]}
    gates = dict(item.split("=") for item in env["FEATURE_GATES"].split(","))
    assert set(gates) == {
        "NodeRepair",
        "ReservedCapacity",
        "SpotToSpotConsolidation",
        "NodeOverlay",
        "StaticCapacity",
        "CapacityBuffer",
    }
    assert settings_of(docs).feature_gates == FeatureGates()


def test_install_notes_name_unknown_gates(cluster_helm: Helm, crds: None) -> None:
    proc = cluster_helm(
        "install",
        "karpenter",
        str(CHART),
        "--namespace",
        "karpenter",
        "--dry-run=client",
        "-f",
        str(KARPENTER_VALUES),
        "-f",
        str(DRIFT_VALUES),
        *[arg for item in SEED_SETS for arg in ("--set", item)],
    )
    notes = [line for line in proc.stdout.splitlines() if "featureGates" in line]
    assert notes == [
        "NOTE: settings.featureGates.drift is not a feature gate of karpy and was not passed on"
        " (known: nodeRepair, reservedCapacity, spotToSpotConsolidation, nodeOverlay,"
        " staticCapacity, capacityBuffer)."
    ], proc.stdout[-2000:]
    clean = cluster_helm(
        "install",
        "karpenter",
        str(CHART),
        "--namespace",
        "karpenter",
        "--dry-run=client",
        "-f",
        str(KARPENTER_VALUES),
        *[arg for item in SEED_SETS for arg in ("--set", item)],
    )
    assert "NOTE:" not in clean.stdout


@pytest.mark.parametrize("values", [(KARPENTER_VALUES,), (KARPENTER_VALUES, DRIFT_VALUES)])
def test_karpenters_values_pass_a_server_side_dry_run(
    helm: Helm, kubectl: Kubectl, crds: None, namespace: str, values: tuple[Path, ...]
) -> None:
    docs = render(helm, namespace, *values)
    proc = kubectl.apply(docs, "--dry-run=server")
    applied = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(applied) == len(docs), proc.stdout
    assert all("(server dry run)" in line for line in applied), proc.stdout


def test_karpenters_pod_and_monitoring_keys_are_honoured(helm: Helm) -> None:
    values: dict[str, Any] = {
        "imagePullPolicy": "Always",
        "hostNetwork": True,
        "schedulerName": "my-scheduler",
        "dnsPolicy": "ClusterFirstWithHostNet",
        "dnsConfig": {"options": [{"name": "ndots", "value": "1"}]},
        "initContainers": [{"name": "wait", "image": "busybox"}],
        "additionalClusterRoleRules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
        ],
        "serviceMonitor": {
            "enabled": True,
            "relabelings": [{"action": "labeldrop", "regex": "pod"}],
            "metricRelabelings": [{"action": "drop", "regex": "go_.*"}],
            "sampleLimit": 5000,
        },
        "extraVolumes": [{"name": "token", "emptyDir": {}}],
        "controller": {
            "extraVolumeMounts": [{"name": "token", "mountPath": "/token"}],
            "sidecarContainer": [{"name": "proxy", "image": "envoy"}],
            "sidecarVolumeMounts": [{"name": "token", "mountPath": "/sidecar-token"}],
            "securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "p"}},
        },
    }
    docs = helm.template(values, namespace="karpenter", sets=SEED_SETS)
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    assert pod["schedulerName"] == "my-scheduler"
    assert pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert pod["dnsConfig"] == values["dnsConfig"]
    assert pod["initContainers"] == values["initContainers"]
    karpy_ctr, sidecar = pod["containers"]
    assert karpy_ctr["imagePullPolicy"] == "Always"
    assert karpy_ctr["securityContext"]["seccompProfile"] == {
        "type": "Localhost",
        "localhostProfile": "p",
    }
    assert sidecar == {
        "name": "proxy",
        "image": "envoy",
        "volumeMounts": [
            {"name": "token", "mountPath": "/token"},
            {"name": "token", "mountPath": "/sidecar-token"},
        ],
    }
    role = next(
        d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "karpenter"
    )
    assert values["additionalClusterRoleRules"][0] in role["rules"]
    monitor = one(docs, "ServiceMonitor")["spec"]
    assert monitor["sampleLimit"] == 5000
    endpoint = monitor["endpoints"][0]
    assert endpoint["relabelings"] == values["serviceMonitor"]["relabelings"]
    assert endpoint["metricRelabelings"] == values["serviceMonitor"]["metricRelabelings"]


def test_helm_show_readme_prints_the_generated_readme(helm: Helm) -> None:
    shown = helm("show", "readme", str(CHART)).stdout
    assert shown.strip() == (CHART / "README.md").read_text().strip()
    assert "| settings.clusterName | string |" in shown
