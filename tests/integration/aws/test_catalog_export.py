"""`karpy catalog export --provider aws` against the moto server: the catalogue a configuration
sees (here with RESERVED_ENIS=1), in the format `karpy simulate --instance-types` reads back with
the AWS overhead and labels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from karpy.scheduling.resources import CPU, MEMORY, PODS
from karpy.simulation.catalogchoice import choose_catalog
from tests.integration.aws.conftest import REGION
from tests.kit.terminal import on_a_terminal

MIB = 1024 * 1024


def test_export_reads_ec2_with_the_settings_and_simulate_reads_it_back(
    moto_server: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": moto_server,
        "RESERVED_ENIS": "1",
    }
    env.pop("CLUSTER_NAME", None)  # not needed to export
    done = subprocess.run(
        [sys.executable, "-m", "karpy.cli", "catalog", "export", "--provider", "aws"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    entries = json.loads(done.stdout)
    assert len(entries) > 1000
    m5 = next(e for e in entries if e["name"] == "m5.large")
    # 3 ENIs, one reserved: 2 x (10 - 1) + 2 pods.
    assert m5["resources"]["pods"] == "20"
    assert m5["labels"]["karpenter.k8s.aws/instance-family"] == "m5"
    spot = [o for o in m5["offerings"] if "spot" in json.dumps(o["Requirements"])]
    assert spot and all(o["Price"] == 0.00001 for o in spot)  # moto's spot history

    path = tmp_path / "types.json"
    path.write_text(done.stdout)
    # an EC2NodeClass scenario takes the exported file as its catalogue
    types = {t.name: t for t in choose_catalog(str(path), {"EC2NodeClass": "NodePool 'x'"})}
    read = types["m5.large"]
    assert read.capacity[PODS] == 20
    # kube-reserved for 20 pods (11 x 20 + 255 Mi) and the 100 Mi eviction threshold.
    assert read.allocatable[MEMORY] == 7577 * MIB - (11 * 20 + 255) * MIB - 100 * MIB
    assert read.allocatable[CPU] == 1930
    assert read.requirements["karpenter.k8s.aws/instance-family"].values == {"m5"}


def test_export_shows_its_progress_on_a_terminal(moto_server: str) -> None:
    env = {**os.environ, "AWS_REGION": REGION, "AWS_ENDPOINT_URL": moto_server}
    karpy = str(Path(sys.executable).parent / "karpy")
    code, out, terminal = on_a_terminal([karpy, "catalog", "export", "--provider", "aws"], env=env)
    assert code == 0, terminal
    assert "reading instance types, offerings and spot prices" in terminal, terminal
    assert any(e["name"] == "m5.large" for e in json.loads(out))


def test_an_unreachable_endpoint_is_a_runtime_failure_in_one_line() -> None:
    env = {
        **os.environ,
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_MAX_ATTEMPTS": "1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    done = subprocess.run(
        [sys.executable, "-m", "karpy.cli", "catalog", "export", "--provider", "aws"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("karpy catalog: cannot read the catalogue from AWS:")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
