"""The Go programs the AWS user data tests consult, built once per machine by their hack/ scripts
into the control plane binary cache: nodeadm (hack/nodeadm), a strict reader of NodeConfigs with
nodeadm's own types (hack/nodeadm/nodeconfig) and the kubelet's label rule (hack/kubeletlabels).
A failed build fails the test with the builder's output; it never skips."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]


@functools.cache
def built(name: str) -> Path:
    """The path of hack/NAME's binary, building it first when needed."""
    script = REPO / "hack" / name / "build.sh"
    proc = subprocess.run([str(script)], capture_output=True, text=True, timeout=3000, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"{script} failed:\n{proc.stderr[-3000:]}")
    return Path(proc.stdout.strip().splitlines()[-1])


def kubelet_label_rule(*keys: str) -> dict[str, Any]:
    """k8s.io/kubelet's KubeletLabels, KubeletLabelNamespaces and IsKubeletLabel of `keys`."""
    proc = subprocess.run(
        [str(built("kubeletlabels")), *keys],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answer: dict[str, Any] = json.loads(proc.stdout)
    return answer


def nodeadm_config_check(path: Path) -> subprocess.CompletedProcess[str]:
    """`nodeadm config check` on one NodeConfig file."""
    return subprocess.run(
        [str(built("nodeadm")), "config", "check", "--config-source", f"file://{path}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def nodeadm_strict_read(path: Path) -> dict[str, Any]:
    """hack/nodeadm/nodeconfig on one NodeConfig file: `{"error"}` when nodeadm's v1alpha1
    types do not have a field of it, else `{"config"}` as they decode it; and the
    `localStorageStrategies` nodeadm defines."""
    proc = subprocess.run(
        [str(built("nodeadm/nodeconfig")), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answer: dict[str, Any] = json.loads(proc.stdout)
    return answer
