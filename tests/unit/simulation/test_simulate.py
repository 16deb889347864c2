"""`karpy simulate`: manifests in, a plan out; invalid input exits 2 with nothing printed."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.cli import main
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.scheduling import dump_catalog

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx
          resources: {requests: {cpu: 500m, memory: 1Gi}}
"""

SCHEMA_KEYS = {"nodeClaims", "existingNodes", "unschedulable", "cost", "stats"}
CLAIM_KEYS = {"name", "nodePool", "instanceTypes", "requirements", "resources", "offering", "pods"}


def write(tmp_path: Path, name: str, *docs: str) -> str:
    path = tmp_path / name
    path.write_text("\n---\n".join(docs))
    return str(path)


def simulate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["simulate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_plan_has_exactly_the_documented_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, "s.yaml", NODEPOOL, DEPLOYMENT)
    code, out, _ = simulate(capsys, "-f", f, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == SCHEMA_KEYS
    assert set(doc["cost"]) == {"total", "lowerBound", "ratio", "optimal", "gap", "exact"}
    # three identical pods on one pool: the exact planner proves the plan cheapest
    assert doc["cost"]["optimal"] is True and doc["cost"]["gap"] == 0
    assert set(doc["stats"]) == {"pods", "nodeClaims", "seconds"}
    assert doc["stats"]["pods"] == 3
    assert doc["nodeClaims"]
    for claim in doc["nodeClaims"]:
        assert set(claim) == CLAIM_KEYS
        assert set(claim["offering"]) == {"instanceType", "zone", "capacityType", "price"}
        assert set(claim["resources"]) == {"requests"}
        assert claim["offering"]["instanceType"] == claim["instanceTypes"][0]
        for r in claim["requirements"]:
            assert set(r) == {"key", "operator", "values"}
    pods = sorted(p for c in doc["nodeClaims"] for p in c["pods"])
    assert pods == ["shop/web-0", "shop/web-1", "shop/web-2"]
    assert doc["cost"]["total"] == pytest.approx(
        sum(c["offering"]["price"] for c in doc["nodeClaims"])
    )
    assert doc["cost"]["lowerBound"] <= doc["cost"]["total"]


def test_yaml_and_table_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, "s.yaml", NODEPOOL, DEPLOYMENT)
    code, out, _ = simulate(capsys, "-f", f, "-o", "yaml")
    assert code == 0 and set(yaml.safe_load(out)) == SCHEMA_KEYS
    code, out, _ = simulate(capsys, "-f", f)
    assert code == 0
    assert "NODEPOOL" in out and "lower bound" in out and "default" in out
    assert "Plan proven optimal." in out


def test_other_kinds_are_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}"
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: b}"
    f = write(tmp_path, "s.yaml", NODEPOOL, service, DEPLOYMENT, cm)
    code, out, err = simulate(capsys, "-f", f, "-o", "json")
    assert code == 0
    assert "Service 'web'" in err and "ConfigMap 'cfg'" in err and "skipped" in err
    assert json.loads(out)["stats"]["pods"] == 3


def test_static_nodepools_are_not_provisioned_onto(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    static = NODEPOOL.replace("{name: default}", "{name: a-fixed}").replace(
        "spec:\n  template:", "spec:\n  replicas: 5\n  template:"
    )
    f = write(tmp_path, "s.yaml", static, NODEPOOL, DEPLOYMENT)
    code, out, err = simulate(capsys, "-f", f, "-o", "json")
    assert code == 0
    assert "static NodePool (spec.replicas): not provisioned" in err
    assert {c["nodePool"] for c in json.loads(out)["nodeClaims"]} == {"default"}


def test_lists_and_several_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pools = write(tmp_path, "pools.yaml", NODEPOOL)
    items = {"apiVersion": "v1", "kind": "List", "items": [yaml.safe_load(DEPLOYMENT)]}
    apps = tmp_path / "apps.json"
    apps.write_text(json.dumps(items))
    code, out, _ = simulate(capsys, "-f", pools, "-f", str(apps), "-o", "json")
    assert code == 0 and json.loads(out)["stats"]["pods"] == 3


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            NODEPOOL.replace("operator: In, values: [amd64]", "operator: Near, values: [amd64]"),
            "spec.template.spec.requirements[1].operator",
        ),
        (DEPLOYMENT.replace("cpu: 500m", "cpu: lots"), "spec.containers[0].resources.requests.cpu"),
        (DEPLOYMENT.replace("replicas: 3", "replicas: -1"), "spec.replicas"),
        ("kind: Pod\nmetadata: {namespace: x}\nspec: {containers: [{name: c}]}", "metadata.name"),
        ("apiVersion: v1\nmetadata: {name: x}", "kind"),
    ],
)
def test_invalid_input_exits_2_naming_document_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: str, expected: str
) -> None:
    f = write(tmp_path, "bad.yaml", NODEPOOL if "NodePool" not in doc else "", doc)
    code, out, err = simulate(capsys, "-f", f, "-o", "json")
    assert code == 2
    assert out == ""
    assert expected in err and "bad.yaml: document" in err


def test_unparseable_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, "broken.yaml", "kind: [unclosed")
    code, out, err = simulate(capsys, "-f", f)
    assert code == 2 and out == "" and "broken.yaml" in err


def test_bad_catalogue_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, "s.yaml", NODEPOOL, DEPLOYMENT)
    cat = tmp_path / "cat.json"
    cat.write_text(json.dumps([{"name": "x", "resources": {"cpu": "many"}}]))
    code, out, err = simulate(capsys, "-f", f, "--instance-types", str(cat))
    assert code == 2 and out == "" and "resources.cpu" in err


def test_custom_catalogue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    only = [t for t in kwok_instance_types() if t.name == "m-4x-amd64-linux"]
    cat = tmp_path / "cat.json"
    cat.write_text(json.dumps(dump_catalog(only)))
    f = write(tmp_path, "s.yaml", NODEPOOL, DEPLOYMENT)
    code, out, _ = simulate(capsys, "-f", f, "--instance-types", str(cat), "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert {c["offering"]["instanceType"] for c in doc["nodeClaims"]} == {"m-4x-amd64-linux"}


def test_existing_nodes_take_pods_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "n1",
            "labels": {"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux"},
        },
        "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
    }
    bound = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "old", "namespace": "shop"},
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
        },
    }
    f = write(tmp_path, "s.yaml", NODEPOOL, yaml.safe_dump(node), yaml.safe_dump(bound), DEPLOYMENT)
    code, out, _ = simulate(capsys, "-f", f, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["existingNodes"] == [
        {"name": "n1", "pods": ["shop/web-0", "shop/web-1", "shop/web-2"]}
    ]
    assert doc["nodeClaims"] == []
    assert doc["stats"]["pods"] == 3


def test_unschedulable_pods_are_listed_with_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = DEPLOYMENT.replace("cpu: 500m", "cpu: '5000'")
    f = write(tmp_path, "s.yaml", NODEPOOL, huge)
    code, out, _ = simulate(capsys, "-f", f, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert len(doc["unschedulable"]) == 3
    assert all('nodepool "default"' in u["reason"] for u in doc["unschedulable"])
    code, out, _ = simulate(capsys, "-f", f)
    assert "Unschedulable pods (3)" in out


def test_statefulset_volume_topology_pins_the_zone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sc = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zonal}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
  - matchLabelExpressions:
      - {key: topology.kubernetes.io/zone, values: [test-zone-c]}
"""
    sts = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: pg, resources: {requests: {cpu: '1', memory: 2Gi}}}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {storageClassName: zonal, resources: {requests: {storage: 10Gi}}}
"""
    f = write(tmp_path, "s.yaml", NODEPOOL, sc, sts)
    code, out, _ = simulate(capsys, "-f", f, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert {c["offering"]["zone"] for c in doc["nodeClaims"]} == {"test-zone-c"}
    assert sorted(p for c in doc["nodeClaims"] for p in c["pods"]) == [
        "default/db-0",
        "default/db-1",
    ]


def test_daemonsets_add_overhead(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  template:
    spec:
      containers: [{name: a, image: a, resources: {requests: {cpu: 200m, memory: 128Mi}}}]
"""
    f = write(tmp_path, "s.yaml", NODEPOOL, ds, DEPLOYMENT)
    code, out, _ = simulate(capsys, "-f", f, "-o", "json")
    doc: dict[str, Any] = json.loads(out)
    assert code == 0
    total_cpu = sum(
        int(c["resources"]["requests"]["cpu"].rstrip("m"))
        if c["resources"]["requests"]["cpu"].endswith("m")
        else int(c["resources"]["requests"]["cpu"]) * 1000
        for c in doc["nodeClaims"]
    )
    assert total_cpu == 1500 + 200 * len(doc["nodeClaims"])


def _kubectl_pod(name: str, *, node: str = "", phase: str = "Pending") -> dict[str, Any]:
    """A pod as `kubectl get pods -o json` prints it, server-set fields included."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": f"uid-{name}",
            "resourceVersion": "42",
            "labels": {"app": "web", "pod-template-hash": "5d8f"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"a": 1}'},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f", "uid": "rs"}
            ],
            "managedFields": [{"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {
            "containers": [
                {"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "500m"}}}
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ],
            **({"nodeName": node} if node else {}),
        },
        "status": {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "False"}]},
    }


def test_a_kubectl_export_is_read_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kubectl get pods,nodes,nodepools -o json`: one List, finished pods left out."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "images": [{"names": ["nginx"], "sizeBytes": 1}],
        },
    }
    pool = yaml.safe_load(NODEPOOL)
    pool["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    items = [
        _kubectl_pod("running", node="n1", phase="Running"),
        _kubectl_pod("done", node="n1", phase="Succeeded"),
        _kubectl_pod("pending-1"),
        _kubectl_pod("pending-2"),
        node,
        pool,
    ]
    f = tmp_path / "cluster.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=4))
    code, out, err = simulate(capsys, "-f", str(f), "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["stats"]["pods"] == 2
    assert sorted(p for c in doc["nodeClaims"] for p in c["pods"]) == [
        "shop/pending-1",
        "shop/pending-2",
    ]
    assert "Pod 'done'" in err and "Succeeded" in err


def test_json_and_yaml_plans_are_the_same_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, "s.yaml", NODEPOOL, DEPLOYMENT)
    _, as_json, _ = simulate(capsys, "-f", f, "-o", "json")
    _, as_yaml, _ = simulate(capsys, "-f", f, "-o", "yaml")
    plan = json.loads(as_json)
    plan["stats"].pop("seconds")
    other = yaml.safe_load(as_yaml)
    other["stats"].pop("seconds")
    assert plan == other
    assert as_json.startswith('{\n  "nodeClaims": [\n    {\n      "name": ')


def test_the_collector_is_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process callers go on after `simulate`: nothing stays frozen or disabled."""
    f = write(tmp_path, "s.yaml", NODEPOOL, DEPLOYMENT)
    for args in (("-f", f), ("-f", str(tmp_path / "missing.yaml"))):
        simulate(capsys, *args)
        assert gc.isenabled()
        assert gc.get_freeze_count() == 0


def test_what_a_run_built_is_kept_only_when_the_process_ends_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `karpy` program exits right after the plan is written: freeing the scenario first
    would only cost time. In-process callers get everything freed as usual."""
    from karpy.simulation import command

    kept: list[object] = []
    monkeypatch.setattr(command, "_KEPT", kept)
    f = write(tmp_path, "s.yaml", NODEPOOL, DEPLOYMENT)
    assert main(["simulate", "-f", f]) == 0
    assert kept == []
    assert main(["simulate", "-f", f, "-o", "json"], process_ends=True) == 0
    assert len(kept) == 2  # the scenario and the result


def test_pods_claiming_dra_devices_are_listed_as_unsupported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dra = """
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml}
spec:
  containers: [{name: t, image: t, resources: {requests: {cpu: 500m}, claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
"""
    f = write(tmp_path, "s.yaml", NODEPOOL, DEPLOYMENT, dra)
    code, out, _ = simulate(capsys, "-f", f, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["stats"]["pods"] == 3
    [left] = doc["unschedulable"]
    assert left["pod"] == "ml/trainer"
    assert "DRA" in left["reason"] and "not supported yet" in left["reason"]


def test_limit_range_defaults_count_in_daemonset_overhead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  template:
    spec:
      containers: [{name: a, image: a}]
"""
    limits = """
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: kube-system}
spec:
  limits: [{type: Container, defaultRequest: {cpu: 300m}, default: {cpu: "1"}}]
"""
    f = write(tmp_path, "s.yaml", NODEPOOL, ds, limits, DEPLOYMENT)
    code, out, err = simulate(capsys, "-f", f, "-o", "json")
    assert code == 0, err
    assert "LimitRange" not in err  # read, not skipped as an unknown kind
    doc: dict[str, Any] = json.loads(out)
    cpu = [c["resources"]["requests"]["cpu"] for c in doc["nodeClaims"]]
    total = sum(int(v[:-1]) if v.endswith("m") else int(v) * 1000 for v in cpu)
    assert total == 1500 + 300 * len(doc["nodeClaims"])
