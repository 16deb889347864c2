"""Pod requests are what kube-scheduler reserves: sidecars, init containers, overhead."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.scheduling.resources import ResourceError, fits, format_resources, pod_requests

GI = 1024**3
MI = 1024**2


def _c(cpu: str | None = None, memory: str | None = None, **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {"name": "c", "resources": {"requests": requests}, **extra}


def test_containers_add_up_and_count_one_pod() -> None:
    spec = {"containers": [_c("500m", "1Gi"), _c("250m", "512Mi")]}
    assert pod_requests(spec) == {"cpu": 750, "memory": GI + 512 * MI, "pods": 1}


def test_init_containers_need_the_max_not_the_sum() -> None:
    spec = {"containers": [_c("500m", "1Gi")], "initContainers": [_c("2", "100Mi"), _c("1", "3Gi")]}
    assert pod_requests(spec) == {"cpu": 2000, "memory": 3 * GI, "pods": 1}


def test_sidecars_run_alongside_containers_and_later_init_containers() -> None:
    spec = {
        "containers": [_c("500m", "1Gi")],
        "initContainers": [
            _c("1", "100Mi"),
            _c("200m", "200Mi", restartPolicy="Always"),
            _c("1", "1Gi"),
        ],
    }
    # steady state: 500m + 200m sidecar; the last init container runs next to the sidecar
    assert pod_requests(spec) == {"cpu": 1200, "memory": GI + 200 * MI, "pods": 1}


def test_overhead_is_added() -> None:
    spec = {"containers": [_c("500m", "1Gi")], "overhead": {"cpu": "100m", "memory": "64Mi"}}
    assert pod_requests(spec) == {"cpu": 600, "memory": GI + 64 * MI, "pods": 1}


def test_missing_request_defaults_to_limit() -> None:
    spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}
    assert pod_requests(spec) == {"cpu": 1000, "memory": GI, "pods": 1}


def test_pod_level_requests_replace_container_totals() -> None:
    spec = {"containers": [_c("500m", "1Gi")], "resources": {"requests": {"cpu": "2"}}}
    assert pod_requests(spec) == {"cpu": 2000, "memory": GI, "pods": 1}


def test_empty_pod_still_takes_a_pod_slot() -> None:
    assert pod_requests({"containers": [{"name": "c"}]}) == {"pods": 1}


def test_bad_quantity_names_the_field() -> None:
    with pytest.raises(ResourceError, match=r"spec.containers\[0\].resources.requests.cpu"):
        pod_requests({"containers": [_c("lots")]})


def test_fits_and_format() -> None:
    assert fits({"cpu": 500, "pods": 1}, {"cpu": 500, "pods": 2, "memory": 1})
    assert not fits({"cpu": 501}, {"cpu": 500})
    assert not fits({"nvidia.com/gpu": 1}, {"cpu": 500})
    assert format_resources({"cpu": 1500, "memory": 3100 * MI, "pods": 3}) == {
        "cpu": "1500m",
        "memory": "3100Mi",
        "pods": "3",
    }
