"""docs/migrating-from-karpenter.md, run as written: its `<!-- step: NAME -->` shell blocks,
in order, with the project's kubectl and helm against the session's control plane.

There is no network to fetch Karpenter's chart, so the release the guide upgrades is a
stand-in with Karpenter's chart name, ServiceAccount, Deployment (Karpenter's image and
selector) and one object karpy's chart does not have (the `karpenter-core` ClusterRole); its
leader Lease is held by a Karpenter pod. The CRDs are the session's (installed with
`kubectl apply`, as from Karpenter's `crds/`), which the guide's loop adopts into `karpy-crd`.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubetest import Kubectl, delete_namespace, micro_time

from tests.integration.chart.chart_support import CHART, CRD_CHART, REPO, Helm
from tests.integration.chart.test_chart_karpenter_values import KARPENTER_VALUES

GUIDE = REPO / "docs" / "migrating-from-karpenter.md"
STANDIN = Path(__file__).parent / "fixtures" / "karpenter-standin"
STEP = re.compile(r"<!-- step: (?P<name>[\w-]+) -->\n```sh\n(?P<body>.*?)```", re.S)
KARPENTER_POD = "karpenter-6b7c9d4f5-x2k8q"
ROLE_ARN = "arn:aws:iam::111122223333:role/KarpenterControllerRole-my-cluster"
CRD_NAMES = (
    "nodepools.karpenter.sh",
    "nodeclaims.karpenter.sh",
    "nodeoverlays.karpenter.sh",
    "ec2nodeclasses.karpenter.k8s.aws",
    "kwoknodeclasses.karpenter.kwok.sh",
    "schedulingconfigs.karpenter.sh",
    "capacitybuffers.autoscaling.x-k8s.io",
)


def steps() -> dict[str, str]:
    found = {m["name"]: m["body"] for m in STEP.finditer(GUIDE.read_text())}
    assert list(found) == ["before", "crds", "switch", "leader", "rollback"], list(found)
    return found


@pytest.fixture
def karpenter_namespace(kubectl: Kubectl) -> Iterator[str]:
    name = f"karpenter-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", name)
    yield name
    delete_namespace(kubectl, name)


class Shell:
    """bash running the guide's blocks with the guide's variables, the project's kubectl and
    helm on PATH, and helm's directories kept to the test."""

    def __init__(self, helm: Helm, kubectl_path: Path, kubeconfig: str, workdir: Path) -> None:
        bindir = workdir / "bin"
        bindir.mkdir()
        (bindir / "kubectl").symlink_to(kubectl_path)
        (bindir / "helm").symlink_to(helm.binary)
        self.workdir = workdir
        self.env = {
            **helm.env(),
            "PATH": f"{bindir}:/usr/bin:/bin",
            "KUBECONFIG": kubeconfig,
        }

    def run(self, script: str, **variables: str) -> str:
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=self.workdir,
            env={**self.env, **variables},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, f"{script}\nexited {proc.returncode}:\n{proc.stderr}"
        return proc.stdout


def test_the_guides_switch_over_and_rollback(
    helm: Helm,
    kubectl: Kubectl,
    kubeconfig: str,
    crds: None,
    karpenter_namespace: str,
    tmp_path: Path,
) -> None:
    ns = karpenter_namespace
    shell = Shell(helm, Path(kubectl.binary), kubeconfig, tmp_path)
    variables = {
        "KARPENTER_NAMESPACE": ns,
        "CLUSTER_NAME": "my-cluster",
        "KARPY_CHART": str(CHART),
        "KARPY_CRD_CHART": str(CRD_CHART),
    }
    # A Karpenter user's state: the release, its values file, its leader Lease
    values = tmp_path / "karpenter-values.yaml"
    values.write_text(
        KARPENTER_VALUES.read_text() + f"\n# the user's own\nserviceAccount:\n  annotations:\n"
        f"    eks.amazonaws.com/role-arn: {ROLE_ARN}\n"
    )
    shell.run(
        f'helm install karpenter "{STANDIN}" -n "$KARPENTER_NAMESPACE" -f "{values}"', **variables
    )
    now = micro_time()
    kubectl.apply(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "karpenter-leader-election", "namespace": ns},
            "spec": {
                "holderIdentity": f"{KARPENTER_POD}_2f0c",
                "leaseDurationSeconds": 15,
                "acquireTime": now,
                "renewTime": now,
            },
        }
    )
    guide = steps()

    before = shell.run(guide["before"], **variables)
    assert "karpenter" in before and f"{KARPENTER_POD}_2f0c" in before

    shell.run(guide["crds"], **variables)
    for name in CRD_NAMES:
        meta = kubectl.json("get", "crd", name)["metadata"]
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "Helm", name
        assert meta["annotations"]["meta.helm.sh/release-name"] == "karpy-crd", name
        assert meta["annotations"]["meta.helm.sh/release-namespace"] == ns, name
    crd_release = kubectl(
        "get", "secret", "-n", ns, "-l", "owner=helm,name=karpy-crd", "-o", "name"
    ).stdout
    assert crd_release.strip(), "the karpy-crd release"

    switched = shell.run(guide["switch"], **variables)
    assert "ghcr.io/karpy/karpy:" in switched  # karpy's image, not controller.image
    assert ROLE_ARN in switched  # the IRSA annotation, on the ServiceAccount `karpenter`
    deployment = kubectl.json("get", "deployment", "karpenter", "-n", ns)
    assert deployment["metadata"]["labels"]["helm.sh/chart"].startswith("karpy-")
    sa = kubectl.json("get", "sa", "karpenter", "-n", ns)
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == ROLE_ARN
    # Karpenter-only objects of the old release are gone; karpy's roles are `karpenter`
    gone = kubectl("get", "clusterrole", "karpenter-core", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    kubectl("get", "clusterrole", "karpenter")
    kubectl("get", "role", "karpenter", "-n", ns)

    leader = shell.run(guide["leader"], **variables)
    # no kubelet runs pods here: the Lease is still the one Karpenter holds (released in a
    # real cluster when its last pod stops), and it is the same Lease karpy's role names
    assert leader.splitlines()[0] == f"{KARPENTER_POD}_2f0c"
    role = kubectl.json("get", "role", "karpenter", "-n", ns)
    assert any("karpenter-leader-election" in (r.get("resourceNames") or []) for r in role["rules"])

    rolled = shell.run(guide["rollback"], **variables)
    assert "public.ecr.aws/karpenter/controller:1.14.1" in rolled
    kubectl("get", "clusterrole", "karpenter-core")
    # the CRDs stay (karpy-crd is another release)
    for name in CRD_NAMES:
        kubectl("get", "crd", name)
