"""The nomination window (Karpenter's max(2 x BATCH_MAX_DURATION, 10 s)) follows the `default`
SchedulingConfig's batchMaxDuration while it sets one."""

from __future__ import annotations

from karpy.apis.descriptors import SCHEDULINGCONFIGS
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.clock import FakeClock
from karpy.kube.transport import AiohttpTransport
from karpy.state import Cluster
from tests.kit import schedulingconfig


async def test_nomination_window_follows_the_default_config() -> None:
    client = Client(AiohttpTransport(base_url="http://127.0.0.1:1"))
    try:
        clock = FakeClock()
        cache = Cache(client)
        cluster = Cluster(cache, clock=clock, nomination_window=20.0)
        cluster.nominate("a")
        await clock.step(19.0)
        assert cluster.is_nominated("a")
        await clock.step(2.0)
        assert not cluster.is_nominated("a")

        configs = cache.informer(SCHEDULINGCONFIGS)
        configs.replace([schedulingconfig(batchMaxDuration="1m", requirements=[])], "1")
        cluster.nominate("b")
        await clock.step(119.0)
        assert cluster.is_nominated("b")  # 2 x 1m
        await clock.step(2.0)
        assert not cluster.is_nominated("b")
    finally:
        await client.close()
