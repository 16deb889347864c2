"""AWSClients makes one client per service and region and reuses it (making one blocks the
event loop for a quarter of a second)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from karpy.cloudprovider.aws.clients import POOL_CONNECTIONS, AWSClients


async def test_one_client_per_service_and_region_is_reused() -> None:
    made: Counter[str] = Counter()

    def seen(service: str, client: Any) -> None:
        made[f"{service}/{client.meta.region_name}"] += 1

    clients = AWSClients("us-east-1", endpoint_url="http://127.0.0.1:9", on_client=seen)

    async def open_ec2() -> Any:
        async with clients.client("ec2") as ec2:
            return ec2

    try:
        burst = await asyncio.gather(*(open_ec2() for _ in range(20)))
        async with clients.client("ec2", region="us-west-2") as other:
            pass
        async with clients.client("ec2") as again:
            pass
        assert made == {"ec2/us-east-1": 1, "ec2/us-west-2": 1}
        assert all(c is burst[0] for c in burst) and again is burst[0]
        assert other is not burst[0]
        assert again.meta.config.max_pool_connections == POOL_CONNECTIONS
    finally:
        await clients.close()
    async with clients.client("ec2") as reopened:
        assert reopened is not burst[0]
    assert made["ec2/us-east-1"] == 2
    await clients.close()
