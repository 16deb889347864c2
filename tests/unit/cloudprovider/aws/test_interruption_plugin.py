"""Wiring: the aws plugin adds the interruption reconciler (leader only) exactly when
INTERRUPTION_QUEUE is set, and says once at start-up when it is not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
import structlog

from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.interruption import InterruptionController
from karpy.cloudprovider.aws.plugin import PLUGIN, build_aws_provider
from karpy.cloudprovider.aws.pricerefresh import OnDemandPriceRefresher
from karpy.kube import Cache, Client, EventRecorder, RealClock
from karpy.kube.transport import AiohttpTransport
from karpy.settings import Settings, load_settings


@dataclass
class Context:
    settings: Settings
    client: Client
    clock: RealClock
    cache: Cache
    events: EventRecorder
    reconcilers: list[Any] = field(default_factory=list)
    runnables: list[tuple[Any, bool]] = field(default_factory=list)

    def count_disrupted(self, claim: Mapping[str, Any], reason: str) -> None:
        pass

    def add(self, reconciler: Any) -> None:
        self.reconcilers.append(reconciler)

    def add_runnable(self, runnable: Any, *, leader_only: bool = True) -> None:
        self.runnables.append((runnable, leader_only))


def context(queue: str | None) -> Context:
    env = {"PROVIDER": "aws", "CLUSTER_NAME": "demo"}
    if queue is not None:
        env["INTERRUPTION_QUEUE"] = queue
    client = Client(AiohttpTransport(base_url="http://127.0.0.1:1"))
    return Context(
        settings=load_settings(env),
        client=client,
        clock=RealClock(),
        cache=Cache(client),
        events=EventRecorder(client),
    )


def register(ctx: Context, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    provider = build_aws_provider(
        ctx.settings,
        clients=AWSClients("us-east-1"),
        cluster_endpoint="https://127.0.0.1:6443",
        kubernetes_version="1.33",
        nodeclass_of=lambda _name: None,  # type: ignore[arg-type,return-value]
    )
    with structlog.testing.capture_logs() as logs:
        PLUGIN.register(ctx, provider)
    return logs


def interruption_runnables(ctx: Any) -> list[tuple[Any, bool]]:
    """The runnables other than the on-demand price refresher, which every AWS setup has."""
    found = [r for r in ctx.runnables if not isinstance(r[0], OnDemandPriceRefresher)]
    assert len(found) == len(ctx.runnables) - 1
    return found


def test_without_a_queue_no_reconciler_runs_and_the_log_says_so_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = context(None)
    logs = register(ctx, monkeypatch)
    assert interruption_runnables(ctx) == []
    off = [e for e in logs if "INTERRUPTION_QUEUE is not set" in e["event"]]
    assert len(off) == 1


def test_with_a_queue_the_reconciler_runs_on_the_leader(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = context("my-cluster")
    logs = register(ctx, monkeypatch)
    [(runnable, leader_only)] = interruption_runnables(ctx)
    assert isinstance(runnable, InterruptionController)
    assert runnable.queue_name == "my-cluster"
    assert leader_only
    assert not [e for e in logs if "INTERRUPTION_QUEUE" in e["event"]]
