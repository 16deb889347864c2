"""`karpy run` refuses a provider it cannot run, before connecting to anything."""

from __future__ import annotations

import os
import subprocess
import sys

_OURS = ("PROVIDER", "KUBECONFIG", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE")


def _run(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in _OURS}
    return subprocess.run(
        [sys.executable, "-m", "karpy.cli", "run"],
        env={**clean, **env, "KUBECONFIG": "/nonexistent"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_aws_needs_a_region() -> None:
    proc = _run(PROVIDER="aws", CLUSTER_NAME="demo", AWS_CONFIG_FILE="/dev/null")
    assert proc.returncode == 2
    assert "AWS_REGION" in proc.stderr


def test_aws_with_a_region_gets_past_the_checks() -> None:
    proc = _run(PROVIDER="aws", CLUSTER_NAME="demo", AWS_REGION="us-west-2")
    assert proc.returncode == 1  # the settings pass; the missing kubeconfig stops it
    assert "AWS_REGION" not in proc.stderr


def test_a_bad_catalogue_stops_start_up(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "types.json")
    with open(path, "w") as f:
        f.write('[{"name": "x", "offerings": []}]')
    proc = _run(PROVIDER="kwok", INSTANCE_TYPES_FILE_PATH=path)
    assert proc.returncode == 2
    assert "INSTANCE_TYPES_FILE_PATH" in proc.stderr and "(x)" in proc.stderr


def test_an_unknown_feature_gate_stops_start_up_naming_it_and_the_known_ones() -> None:
    """A gate of another Karpenter release (the chart leaves such gates out; a hand-written
    FEATURE_GATES may not): status 2, the gate named, and the gates karpy knows."""
    proc = _run(PROVIDER="kwok", FEATURE_GATES="Drift=true,NodeRepair=true")
    assert proc.returncode == 2, proc.stderr
    assert "FEATURE_GATES" in proc.stderr
    assert "unknown feature gate 'Drift'" in proc.stderr
    for known in (
        "NodeRepair",
        "ReservedCapacity",
        "SpotToSpotConsolidation",
        "NodeOverlay",
        "StaticCapacity",
        "CapacityBuffer",
    ):
        assert known in proc.stderr, known
