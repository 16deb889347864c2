"""`karpy run` with PROVIDER=aws closes its aioboto3 clients when it stops: the operator runs
in this process against the local control plane and the moto server, resolves an EC2NodeClass
(EC2, SSM, IAM clients opened), then gets SIGTERM. Afterwards no client is open and dropping
the last references raises no "Unclosed client session" / "Unclosed connector" warning (what
aiohttp reports for pools left to the garbage collector)."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import warnings

import pytest
from kubetest import Kubectl

from karpy import operator
from karpy.cloudprovider.aws.provider import AWSCloudProvider
from karpy.cloudprovider.registry import get_plugin
from karpy.cloudprovider.types import CloudProvider
from karpy.settings import load_settings
from tests.integration.aws.conftest import REGION
from tests.integration.aws.test_launch import (  # noqa: F401  (fixtures)
    CLUSTER,
    DISCOVERY,
    ROLE,
    World,
    world,
)

pytestmark = pytest.mark.usefixtures("crds", "clean_cluster")


def ready(kubectl: Kubectl) -> bool:
    found = kubectl.json("get", "ec2nodeclass", "default")
    conditions = (found.get("status") or {}).get("conditions") or ()
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


async def wait_ready(kubectl: Kubectl, *, within: float = 120.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        if await asyncio.to_thread(ready, kubectl):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"EC2NodeClass not Ready after {within:.0f}s")
        await asyncio.sleep(0.5)


async def test_sigterm_closes_the_aws_clients(
    kubeconfig: str,
    kubectl: Kubectl,
    world: World,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", str(world.clients.endpoint_url))
    monkeypatch.setenv("AWS_REGION", REGION)
    settings = load_settings(
        {
            "PROVIDER": "aws",
            "CLUSTER_NAME": CLUSTER,
            "CLUSTER_ENDPOINT": "https://prod.example.com",
            "KUBECONFIG": kubeconfig,
            "DISABLE_LEADER_ELECTION": "true",
            "METRICS_PORT": "0",
            "HEALTH_PROBE_PORT": "0",
            "BIND_ADDRESS": "127.0.0.1",
        }
    )
    # What earlier tests in this process left to the collector (or in a heap a manager froze)
    # is collected now, unrecorded: the check at the end sees only what this run leaves.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gc.unfreeze()
        gc.collect()
    built: list[CloudProvider] = []

    def keep(provider: CloudProvider) -> CloudProvider:
        built.append(provider)
        return provider

    kubectl.apply(
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "amiFamily": "AL2023",
                "amiSelectorTerms": [{"id": world.amis["amd64"]}],
                "subnetSelectorTerms": [{"tags": DISCOVERY}],
                "securityGroupSelectorTerms": [{"tags": DISCOVERY}],
                "role": ROLE,
            },
        }
    )
    run = asyncio.create_task(operator._main(settings, get_plugin("aws"), keep))
    try:
        await wait_ready(kubectl)
    except BaseException:
        run.cancel()
        raise
    provider = built[0]
    assert isinstance(provider, AWSCloudProvider) and provider.clients is not None
    clients = provider.clients
    assert clients.open >= 2  # EC2 and IAM: what resolving the class used
    # The manager traps SIGTERM on the loop (as in `karpy run`): a graceful stop.
    assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN, None)
    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(run, timeout=120) == 0
    assert clients.open == 0

    del provider, clients, run
    built.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.unfreeze()  # the manager froze the heap after its caches synced
        gc.collect()
    unclosed = [str(w.message) for w in caught if "Unclosed" in str(w.message)]
    assert unclosed == []
