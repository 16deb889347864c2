"""`karpy simulate` on malformed scenarios: exit 2, one line on standard error naming the file,
the document and the field, nothing on standard output, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from karpy.cli import main

NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: kubernetes.io/os, operator: In, values: [linux]}
"""


def pod(
    spec: str = "containers: [{name: c, resources: {requests: {cpu: 100m}}}]", **meta: str
) -> str:
    fields = ", ".join(f"{k}: {v}" for k, v in {"name": "p", **meta}.items())
    return f"apiVersion: v1\nkind: Pod\nmetadata: {{{fields}}}\nspec: {{{spec}}}\n"


def container(extra: str) -> str:
    return f"containers: [{{name: c, {extra}}}]"


def workload(kind: str, spec: str, template_spec: str = "containers: [{name: c}]") -> str:
    template = f"{{metadata: {{labels: {{app: w}}}}, spec: {{{template_spec}}}}}"
    return (
        f"apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: w}}\n"
        f"spec: {{{spec}, template: {template}}}\n"
    )


NODE = (
    "apiVersion: v1\nkind: Node\nmetadata: {{name: n1}}\nspec: {{{spec}}}\n"
    "status: {{allocatable: {{{allocatable}}}}}\n"
)

# (id, the document after a valid NodePool (document 2), the field the message must name)
CASES: list[tuple[str, str, str]] = [
    ("labels-list", pod(labels="[a]"), "metadata.labels"),
    ("label-value-number", pod(labels="{app: 1}"), "metadata.labels.app"),
    ("annotations-number", pod(annotations="5"), "metadata.annotations"),
    ("owner-references-string", pod(ownerReferences="x"), "metadata.ownerReferences"),
    ("metadata-list", "apiVersion: v1\nkind: Pod\nmetadata: [1]\nspec: {}\n", "metadata"),
    ("name-number", pod(name="5"), "metadata.name"),
    ("name-date", pod(name="2024-01-01"), "metadata.name"),
    (
        "name-missing",
        "apiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\nspec: {}\n",
        "metadata.name",
    ),
    ("kind-number", "apiVersion: v1\nkind: 5\nmetadata: {name: x}\n", "kind"),
    ("kind-missing", "apiVersion: v1\nmetadata: {name: x}\n", "kind"),
    ("spec-list", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: [1]\n", "spec"),
    ("spec-missing", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", "spec"),
    ("containers-number", pod("containers: 5"), "spec.containers"),
    ("containers-empty", pod("containers: []"), "spec.containers"),
    ("container-number", pod("containers: [5]"), "spec.containers[0]"),
    (
        "init-containers-object",
        pod("containers: [{name: c}], initContainers: {a: b}"),
        "spec.initContainers",
    ),
    ("node-selector-string", pod("containers: [{name: c}], nodeSelector: x"), "spec.nodeSelector"),
    (
        "node-selector-value-list",
        pod("containers: [{name: c}], nodeSelector: {a: [b]}"),
        "spec.nodeSelector.a",
    ),
    ("node-name-list", pod("containers: [{name: c}], nodeName: [n]"), "spec.nodeName"),
    ("priority-string", pod("containers: [{name: c}], priority: high"), "spec.priority"),
    (
        "tolerations-object",
        pod("containers: [{name: c}], tolerations: {key: a}"),
        "spec.tolerations",
    ),
    (
        "toleration-operator",
        pod("containers: [{name: c}], tolerations: [{key: a, operator: Maybe}]"),
        "spec.tolerations[0].operator",
    ),
    (
        "toleration-effect",
        pod(
            "containers: [{name: c}], tolerations: [{key: a, operator: Exists, effect: Sometimes}]"
        ),
        "spec.tolerations[0].effect",
    ),
    (
        "cpu-negative",
        pod(container("resources: {requests: {cpu: -1}}")),
        "spec.containers[0].resources.requests.cpu",
    ),
    (
        "memory-negative",
        pod(container("resources: {requests: {memory: -1Gi}}")),
        "spec.containers[0].resources.requests.memory",
    ),
    (
        "cpu-words",
        pod(container("resources: {requests: {cpu: lots}}")),
        "spec.containers[0].resources.requests.cpu",
    ),
    (
        "cpu-boolean",
        pod(container("resources: {limits: {cpu: true}}")),
        "spec.containers[0].resources.limits.cpu",
    ),
    (
        "requests-list",
        pod(container("resources: {requests: [cpu]}")),
        "spec.containers[0].resources.requests",
    ),
    (
        "host-port-range",
        pod(container("ports: [{containerPort: 80, hostPort: 70000}]")),
        "spec.containers[0].ports[0].hostPort",
    ),
    (
        "overhead-negative",
        pod("containers: [{name: c}], overhead: {cpu: -100m}"),
        "spec.overhead.cpu",
    ),
    ("affinity-string", pod("containers: [{name: c}], affinity: yes"), "spec.affinity"),
    (
        "node-selector-terms-object",
        pod(
            "containers: [{name: c}], affinity: {nodeAffinity: "
            "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: {a: b}}}}"
        ),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
    ),
    (
        "node-selector-operator",
        pod(
            "containers: [{name: c}], affinity: {nodeAffinity: "
            "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
            "[{matchExpressions: [{key: a, operator: Near, values: [b]}]}]}}}"
        ),
        "nodeSelectorTerms[0].matchExpressions[0].operator",
    ),
    (
        "preferred-weight-zero",
        pod(
            "containers: [{name: c}], affinity: {podAntiAffinity: "
            "{preferredDuringSchedulingIgnoredDuringExecution: [{weight: 0, podAffinityTerm: "
            "{topologyKey: zone}}]}}"
        ),
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
    ),
    (
        "match-labels-list",
        pod(
            "containers: [{name: c}], affinity: {podAffinity: "
            "{requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: zone, "
            "labelSelector: {matchLabels: [a]}}]}}"
        ),
        "requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchLabels",
    ),
    (
        "spread-string",
        pod("containers: [{name: c}], topologySpreadConstraints: x"),
        "spec.topologySpreadConstraints",
    ),
    (
        "spread-max-skew-zero",
        pod(
            "containers: [{name: c}], topologySpreadConstraints: [{maxSkew: 0, topologyKey: zone, "
            "whenUnsatisfiable: DoNotSchedule}]"
        ),
        "spec.topologySpreadConstraints[0].maxSkew",
    ),
    ("volumes-string", pod("containers: [{name: c}], volumes: data"), "spec.volumes"),
    ("replicas-string", workload("Deployment", "replicas: '3'"), "spec.replicas"),
    ("replicas-negative", workload("Deployment", "replicas: -1"), "spec.replicas"),
    (
        "template-missing",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {replicas: 1}\n",
        "spec.template",
    ),
    (
        "template-containers-number",
        workload("ReplicaSet", "replicas: 1", "containers: 5"),
        "spec.template.spec.containers",
    ),
    (
        "template-labels-list",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\n"
        "spec: {template: {metadata: {labels: [a]}, spec: {containers: [{name: c}]}}}\n",
        "spec.template.metadata.labels",
    ),
    ("job-parallelism-negative", workload("Job", "parallelism: -2"), "spec.parallelism"),
    (
        "claim-template-zero",
        workload(
            "StatefulSet",
            "replicas: 1, volumeClaimTemplates: [{metadata: {name: d}, spec: {resources: "
            "{requests: {storage: 0}}}}]",
        ),
        "spec.volumeClaimTemplates[0].spec.resources.requests.storage",
    ),
    (
        "claim-negative",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: d}\n"
        "spec: {resources: {requests: {storage: -5Gi}}}\n",
        "spec.resources.requests.storage",
    ),
    (
        "node-allocatable-negative",
        NODE.format(spec="", allocatable="cpu: -4"),
        "status.allocatable.cpu",
    ),
    ("node-taints-object", NODE.format(spec="taints: {a: b}", allocatable="cpu: 4"), "spec.taints"),
    (
        "node-taint-effect",
        NODE.format(spec="taints: [{key: a, effect: Never}]", allocatable="cpu: 4"),
        "spec.taints[0].effect",
    ),
    (
        "storage-class-mode",
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: s}\n"
        "provisioner: x\nvolumeBindingMode: Later\n",
        "volumeBindingMode",
    ),
    (
        "volume-terms-string",
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: v}\n"
        "spec: {nodeAffinity: {required: {nodeSelectorTerms: x}}}\n",
        "spec.nodeAffinity.required.nodeSelectorTerms",
    ),
    (
        "namespace-labels-list",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: n, labels: [a]}\n",
        "metadata.labels",
    ),
    ("skipped-kind-metadata-list", "apiVersion: v1\nkind: Service\nmetadata: [1]\n", "metadata"),
    ("document-number", "5\n", "document 2"),
    (
        "nodepool-spec-list",
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: other}\nspec: [1]\n",
        "spec",
    ),
    (
        "nodepool-values-string",
        NODEPOOL.replace("values: [linux]", "values: linux").replace("name: default", "name: b"),
        "spec.template.spec.requirements[0].values",
    ),
    (
        "nodepool-weight-string",
        NODEPOOL.replace("name: default", "name: c") + "  weight: high\n",
        "spec.weight",
    ),
    ("too-many-replicas", workload("Deployment", "replicas: 1000000"), "spec.replicas"),
]


def _run_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["simulate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _assert_one_line_error(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize(("doc", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: str, field: str
) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(NODEPOOL + "---\n" + doc)
    code, out, err = _run_in_process(capsys, "-f", str(f), "-o", "json")
    _assert_one_line_error(code, out, err, "bad.yaml: document 2", field)


def test_malformed_items_of_a_kubectl_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "a"},
        "spec": {"containers": [{"name": "c"}]},
    }
    bad = {
        **good,
        "metadata": {"name": "b"},
        "spec": {"containers": [{"name": "c"}], "tolerations": {"key": "x"}},
    }
    f = tmp_path / "pods.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [good, bad]}))
    code, out, err = _run_in_process(capsys, "-f", str(f))
    _assert_one_line_error(code, out, err, "pods.json: document 2 (Pod 'b')", "spec.tolerations")


# The checks remember tolerations, affinities and spreads that passed (pods of one workload
# repeat them): a later pod whose copy differs only in a value's type is still refused.
_REPEATED = [
    (
        "tolerationSeconds: 300",
        "tolerationSeconds: '300'",
        "spec.tolerations[0].tolerationSeconds",
    ),
    ("tolerationSeconds: 300", "tolerationSeconds: 2024-01-01", "spec.tolerations[0]"),
    ("tolerationSeconds: 300", "tolerationSeconds: .nan", "spec.tolerations[0]"),
    ("tolerationSeconds: null", "tolerationSeconds: .nan", "spec.tolerations[0]"),
]


@pytest.mark.parametrize(("good", "bad", "field"), _REPEATED)
def test_a_repeated_field_is_checked_again_when_its_type_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], good: str, bad: str, field: str
) -> None:
    def toleration_pod(name: str, seconds: str) -> str:
        toleration = f"{{key: k, operator: Exists, effect: NoExecute, {seconds}}}"
        return pod(f"containers: [{{name: c}}], tolerations: [{toleration}]", name=name)

    f = tmp_path / "pods.yaml"
    f.write_text(
        "---\n".join(
            [
                NODEPOOL,
                toleration_pod("a", good),
                toleration_pod("b", good),
                toleration_pod("c", bad),
            ]
        )
    )
    code, out, err = _run_in_process(capsys, "-f", str(f))
    _assert_one_line_error(code, out, err, "pods.yaml: document 4 (Pod 'c')", field)


@pytest.mark.parametrize(
    ("items", "needle"),
    [("5", "items"), ("[5]", "document 1"), ("[null, [1]]", "document 1")],
)
def test_malformed_list_structure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], items: str, needle: str
) -> None:
    f = tmp_path / "list.json"
    f.write_text(f'{{"apiVersion": "v1", "kind": "List", "items": {items}}}')
    code, out, err = _run_in_process(capsys, "-f", str(f))
    _assert_one_line_error(code, out, err, "list.json", needle)


def test_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes((NODEPOOL + "---\n" + pod(labels="{team: café}")).encode("latin-1"))
    code, out, err = _run_in_process(capsys, "-f", str(f))
    _assert_one_line_error(code, out, err, "latin1.yaml", "not UTF-8", "line 13")


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("broken.yaml", "kind: Pod\nmetadata: {name: [unclosed\n  spec: x\n", "not valid YAML"),
        ("broken.json", '{"kind": "Pod",,}', "not valid JSON"),
        ("deep.json", "[" * 200_000, "nested too deeply"),
    ],
)
def test_unparseable_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, needle: str
) -> None:
    f = tmp_path / name
    f.write_text(text)
    code, out, err = _run_in_process(capsys, "-f", str(f))
    _assert_one_line_error(code, out, err, name, needle)


def test_pod_cap_and_the_flag_that_raises_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(NODEPOOL + "---\n" + workload("Deployment", "replicas: 3"))
    code, out, err = _run_in_process(capsys, "-f", str(f), "--max-pods", "2")
    _assert_one_line_error(code, out, err, "s.yaml: document 2", "spec.replicas", "--max-pods")
    code, out, _ = _run_in_process(capsys, "-f", str(f), "--max-pods", "3", "-o", "json")
    assert code == 0 and json.loads(out)["stats"]["pods"] == 3


def test_finished_pods_are_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = (
        pod().replace("metadata: {name: p}", "metadata: {name: done}")
        + "status: {phase: Succeeded}\n"
    )
    f = tmp_path / "s.yaml"
    f.write_text(NODEPOOL + "---\n" + pod() + "---\n" + done)
    code, out, err = _run_in_process(capsys, "-f", str(f), "-o", "json")
    assert code == 0 and json.loads(out)["stats"]["pods"] == 1
    assert "Pod 'done'" in err and "Succeeded" in err


# As a user runs it: a real process, its exit status and its standard error.
SUBPROCESS_CASES = [
    ("labels-list", pod(labels="[a]").encode(), "metadata.labels"),
    ("containers-number", pod("containers: 5").encode(), "spec.containers"),
    ("not-utf8", pod(labels="{team: caf\xe9}").encode("latin-1"), "not UTF-8"),
    (
        "cpu-zero-storage",
        CASES[[c[0] for c in CASES].index("claim-negative")][1].encode(),
        "storage",
    ),
]


@pytest.mark.parametrize(
    ("data", "field"), [c[1:] for c in SUBPROCESS_CASES], ids=[c[0] for c in SUBPROCESS_CASES]
)
def test_malformed_via_the_command(tmp_path: Path, data: bytes, field: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_bytes(NODEPOOL.encode() + b"---\n" + data)
    proc = subprocess.run(
        [sys.executable, "-m", "karpy.cli", "simulate", "-f", str(f), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    _assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "bad.yaml", field)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\xff\xfe[]", "not UTF-8"),
        (b"5", "expected a JSON list"),
        (b'[{"name": 5}]', "[0].name"),
        (b'[{"name": "x", "resources": [1]}]', "[0] (x).resources"),
    ],
)
def test_malformed_catalogue_names_the_catalogue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes, needle: str
) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(NODEPOOL)
    cat = tmp_path / "types.json"
    cat.write_bytes(data)
    code, out, err = _run_in_process(capsys, "-f", str(f), "--instance-types", str(cat))
    _assert_one_line_error(code, out, err, "types.json", needle)
    assert "s.yaml" not in err


@pytest.mark.parametrize(
    ("name", "needle"), [("missing.yaml", "cannot read"), (".", "no manifest in the directory")]
)
def test_unreadable_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, needle: str
) -> None:
    code, out, err = _run_in_process(capsys, "-f", str(tmp_path / name))
    _assert_one_line_error(code, out, err, needle)


def test_the_simulate_path_loads_no_cluster_client(tmp_path: Path) -> None:
    """Start-up time: `karpy simulate` needs no Kubernetes client, AWS SDK or log setup."""
    f = tmp_path / "s.yaml"
    f.write_text(NODEPOOL + "---\n" + pod())
    script = (
        "import sys\nfrom karpy.cli import main\n"
        f"assert main(['simulate', '-f', {str(f)!r}]) == 0\n"
        "heavy = ('kubernetes_asyncio', 'aioboto3', 'botocore', 'aiohttp', 'structlog')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_malformed_standard_input_via_the_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "karpy.cli", "simulate", "-f", "-"],
        input=b"kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}], nodeSelector: x}\n",
        capture_output=True,
        check=False,
    )
    _assert_one_line_error(
        proc.returncode,
        proc.stdout.decode(),
        proc.stderr.decode(),
        "<stdin>: document 1 (Pod 'p')",
        "spec.nodeSelector",
    )
