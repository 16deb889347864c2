"""Karpenter's kwok provider conventions: instance-type labels, and kwok's stage annotations and
labels as the simulator reads them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from karpy.cloudprovider.kwok.catalog import (
    instance_family,
    instance_size,
    kwok_instance_types,
    load_kwok_catalog,
)
from karpy.cloudprovider.kwok.stages import (
    DurationError,
    deletion_finishes_at,
    is_unhealthy,
    parse_go_duration,
)
from karpy.scheduling.instancetypes import InstanceType
from tests.kit import pod

SIZE = "karpenter.kwok.sh/instance-size"
FAMILY = "karpenter.kwok.sh/instance-family"
CPU = "karpenter.kwok.sh/instance-cpu"
MEMORY = "karpenter.kwok.sh/instance-memory"


def _labels(name: str, types: list[InstanceType]) -> dict[str, str]:
    found = next(t for t in types if t.name == name)
    return {k: v for k, v in found.requirements.labels().items() if k.startswith("karpenter.kwok")}


def test_builtin_types_carry_karpenters_kwok_labels() -> None:
    types = kwok_instance_types()
    assert _labels("c-16x-amd64-linux", types) == {
        SIZE: "16",
        FAMILY: "c",
        CPU: "16",
        MEMORY: "32Gi",
    }
    assert _labels("m-1x-arm64-windows", types) == {
        SIZE: "1",
        FAMILY: "m",
        CPU: "1",
        MEMORY: "8Gi",
    }


def test_catalogue_file_labels_print_quantities_as_written(tmp_path: Path) -> None:
    offering = {
        "Price": 0.1,
        "Available": True,
        "Requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z"]},
        ],
    }
    entries = [
        {"name": "m5.large", "resources": {"cpu": "2", "memory": "8Gi"}},
        {"name": "standard", "resources": {"cpu": "0.5", "memory": "32G"}},
        {"name": "gp-4", "resources": {"cpu": 4, "memory": "1536Mi"}},
    ]
    path = tmp_path / "types.json"
    path.write_text(json.dumps([{**e, "offerings": [offering]} for e in entries]))
    types = load_kwok_catalog(path)
    assert _labels("m5.large", types) == {SIZE: "large", FAMILY: "m5", CPU: "2", MEMORY: "8Gi"}
    assert _labels("standard", types) == {SIZE: "500m", FAMILY: "s", CPU: "500m", MEMORY: "32G"}
    assert _labels("gp-4", types) == {SIZE: "4", FAMILY: "gp", CPU: "4", MEMORY: "1536Mi"}


@pytest.mark.parametrize(
    ("name", "cpu", "size", "family"),
    [
        ("c-16x-amd64-linux", "16", "16", "c"),
        ("m5.24xlarge", "96", "24xlarge", "m5"),
        ("t3.micro", "2", "micro", "t3"),
        ("Standard_D2s_v3", "2", "2", "S"),
        ("n2-standard-8", "8", "8", "n2"),
    ],
)
def test_size_and_family_from_the_name(name: str, cpu: str, size: str, family: str) -> None:
    assert (instance_size(name, cpu), instance_family(name)) == (size, family)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("30s", 30), ("1m30s", 90), ("1.5h", 5400), ("250ms", 0.25), ("2h3m4s", 7384)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "30", "5 minutes", "1d", "s", "1m-2s"])
def test_bad_go_durations_name_the_value(text: str) -> None:
    with pytest.raises(DurationError, match="is not a duration"):
        parse_go_duration(text)


def test_a_delete_delay_counts_from_the_deletion_request() -> None:
    deleting = pod(
        annotations={"pod-delete.stage.kwok.x-k8s.io/delay": "45s"},
        deleted="2026-01-01T00:00:30Z",
    )
    deleting["metadata"]["deletionGracePeriodSeconds"] = 30
    assert deletion_finishes_at(deleting) == datetime(2026, 1, 1, 0, 0, 45, tzinfo=UTC)
    not_deleting = pod(annotations={"pod-delete.stage.kwok.x-k8s.io/delay": "45s"})
    assert deletion_finishes_at(not_deleting) is None


def test_without_a_delete_delay_a_deletion_ends_with_the_grace_period() -> None:
    # the API server sets deletionTimestamp to the request plus the grace period
    deleting = pod(deleted="2026-01-01T00:01:30Z")
    deleting["metadata"]["deletionGracePeriodSeconds"] = 60
    assert deletion_finishes_at(deleting) == datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC)
    assert deletion_finishes_at(pod()) is None


def test_the_unhealthy_stage_is_a_label() -> None:
    assert is_unhealthy(pod(labels={"kwok.x-k8s.io/stage": "unhealthy"}))
    assert not is_unhealthy(pod(labels={"kwok.x-k8s.io/stage": "healthy"}))
    assert not is_unhealthy(pod(annotations={"kwok.x-k8s.io/stage": "unhealthy"}))
