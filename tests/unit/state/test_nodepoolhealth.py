"""The registration-health ring buffer of a NodePool's recent launches."""

from __future__ import annotations

from karpy.state.nodepoolhealth import HealthStatus, NodePoolHealth


def test_registration_health_ring_buffer() -> None:
    health = NodePoolHealth()
    seen: list[str] = []
    health.subscribe(seen.append)
    assert health.status("p") is HealthStatus.UNKNOWN
    health.record_success("p")
    health.record_failure("p")
    assert health.status("p") is HealthStatus.HEALTHY  # 1 failure in 4 slots: 25%
    health.record_failure("p", reason="InsufficientCapacity", message="none")
    assert health.status("p") is HealthStatus.UNHEALTHY  # 2 of 4: 50%
    last = health.last_failure("p")
    assert last is not None and last.reason == "InsufficientCapacity"
    for _ in range(3):
        health.record_success("p")
    assert health.status("p") is HealthStatus.HEALTHY  # the failures fell out of the buffer
    assert seen == ["p"] * 6
    health.reset("p")
    assert health.status("p") is HealthStatus.UNKNOWN
