"""`karpy run`: wire settings, the Kubernetes client, shared informers, leader election and
controllers into one manager, and run it until SIGTERM.

To add an informer, append its resource to `CACHED_RESOURCES` (and grant `list`/`watch` in the
chart's ClusterRole, `manifests/charts/karpy/templates/clusterrole.yaml`). `_main` fills one
`ControllerContext` (settings, client, cache, events, clock, cloud provider, cluster state,
manager) and hands it to each of `REGISTRATIONS`: the informers, the kwok simulator, then every
area's `register(ctx)` (`karpy.controllers`). Controllers run only on the elected leader; caches
and the cluster state on every replica. The cloud provider comes from `PROVIDER`: `kwok` (fake
nodes, with karpy's node/pod simulator on the leader) wrapped in the metrics decorator; `aws` is
not in this build yet and stops start-up with status 2.

Exit status: 0 after a graceful stop, 1 on a fatal error or when the leader lease is lost (the
process exits at once so a restart comes back as a standby), 2 for invalid settings.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import uuid
from collections.abc import Callable

import structlog
import uvloop

from karpy.apis.descriptors import CRD_RESOURCES, NODECLAIMS
from karpy.cloudprovider import faults
from karpy.cloudprovider.kwok.catalog import kwok_instance_types, load_kwok_catalog
from karpy.cloudprovider.kwok.provider import KwokCloudProvider
from karpy.cloudprovider.kwok.simulator import KwokSimulator
from karpy.cloudprovider.metrics import MetricsCloudProvider
from karpy.cloudprovider.types import CloudProvider
from karpy.controllers import ControllerContext, register_all
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.errors import ConfigError
from karpy.kube.events import EventRecorder
from karpy.kube.leaderelection import LeaderElectionConfig
from karpy.kube.logconfig import configure_logging
from karpy.kube.manager import LeaderElectionLostError, Manager, ManagerOptions
from karpy.kube.offload import shutdown_offload
from karpy.kube.resources import (
    CSINODES,
    DAEMONSETS,
    NAMESPACES,
    NODES,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PODDISRUPTIONBUDGETS,
    PODS,
    STORAGECLASSES,
    VOLUMEATTACHMENTS,
    Resource,
)
from karpy.scheduling.catalog import CatalogError
from karpy.scheduling.instancetypes import InstanceType
from karpy.settings import SETTINGS, Settings, SettingsError, load_settings
from karpy.state import Cluster, nomination_window

__all__ = [
    "CACHED_RESOURCES",
    "REGISTRATIONS",
    "ProviderUnavailableError",
    "add_arguments",
    "register_informers",
    "register_simulator",
    "run",
]

log = structlog.get_logger("karpy.operator")

CACHED_RESOURCES: tuple[Resource, ...] = (
    PODS,
    NODES,
    NAMESPACES,
    DAEMONSETS,
    PODDISRUPTIONBUDGETS,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    STORAGECLASSES,
    CSINODES,
    VOLUMEATTACHMENTS,
    *CRD_RESOURCES,
)
"""Resources every replica keeps in its cache (RBAC: list and watch each)."""

COMPONENT = "karpenter"
"""Event source component and leader-lease name prefix, as Karpenter's."""


class ProviderUnavailableError(Exception):
    """The configured cloud provider cannot run in this build or with these settings."""


def instance_types(settings: Settings) -> list[InstanceType]:
    """The kwok catalogue: INSTANCE_TYPES_FILE_PATH if set, else the built-in 144 types."""
    path = settings.kwok.instance_types_file_path
    if path is None:
        return kwok_instance_types()
    try:
        return load_kwok_catalog(path)
    except CatalogError as exc:
        raise ProviderUnavailableError(f"INSTANCE_TYPES_FILE_PATH: {exc}") from None


def check_provider(settings: Settings) -> None:
    """Fail fast, before connecting, on a provider this build cannot run."""
    if settings.provider == "aws":
        raise ProviderUnavailableError(
            "PROVIDER=aws: the AWS provider is not available in this build yet; "
            "use PROVIDER=kwok for local clusters"
        )
    if settings.provider == "kwok":
        instance_types(settings)


def build_provider(settings: Settings, *, client: Client, cache: Cache) -> CloudProvider:
    """The cloud provider of `PROVIDER`, wrapped in the metrics decorator."""
    check_provider(settings)
    inner = KwokCloudProvider(client=client, cache=cache, instance_types=instance_types(settings))
    # Test-only fault injection (KARPY_TEST_PROVIDER_FAULTS); the provider itself when unset.
    return MetricsCloudProvider(faults.from_env(inner))


def register_informers(ctx: ControllerContext) -> None:
    """Create the shared informers (they start with the manager, on every replica)."""
    for resource in CACHED_RESOURCES:
        ctx.informer(resource)


def register_simulator(ctx: ControllerContext) -> None:
    """With the kwok provider, karpy plays the kubelet of its fake nodes (leader only)."""
    inner = ctx.cloud_provider
    while isinstance(inner, MetricsCloudProvider | faults.FaultyCloudProvider):
        inner = inner.inner
    if not isinstance(inner, KwokCloudProvider):
        return
    # The simulator stands in for the kubelets of every kwok node: its requests get their own
    # budget, so marking a thousand pods Running does not slow karpy's own calls.
    client = ctx.client
    simulator_client = Client(
        client.transport,
        qps=ctx.settings.kube_client.qps,
        burst=ctx.settings.kube_client.burst,
        host=client.host,
    )
    simulator = KwokSimulator(
        client=simulator_client,
        cache=ctx.cache,
        provider=inner,
        nodeclaims=NODECLAIMS,
        clock=ctx.clock,
    )
    for reconciler in simulator.reconcilers():
        ctx.add(reconciler)


REGISTRATIONS: list[Callable[[ControllerContext], None]] = [
    register_informers,
    register_simulator,
    register_all,
]
"""Run in order at start-up; each may add informers, indexers and runnables."""


# -- command line ---------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per setting (`--batch-idle-duration` for `BATCH_IDLE_DURATION`); flags win."""
    group = parser.add_argument_group(
        "settings", "each flag overrides the environment variable of the same name"
    )
    for spec in SETTINGS:
        help_text = f"{spec.help} (env {spec.env}; default {spec.default})"
        if spec.boolean:
            group.add_argument(
                spec.flag,
                dest=spec.env,
                nargs="?",
                const="true",
                default=None,
                metavar="BOOL",
                help=help_text,
            )
        else:
            group.add_argument(
                spec.flag, dest=spec.env, default=None, metavar="VALUE", help=help_text
            )


def _overrides(args: argparse.Namespace) -> dict[str, str]:
    return {
        spec.env: str(value)
        for spec in SETTINGS
        if (value := getattr(args, spec.env, None)) is not None
    }


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(_overrides(args))
    except SettingsError as exc:
        print(f"karpy run: {exc}", file=sys.stderr)
        return 2
    try:
        check_provider(settings)
    except ProviderUnavailableError as exc:
        print(f"karpy run: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)
    try:
        return uvloop.run(_main(settings))
    except LeaderElectionLostError:
        log.error("leader election lost; exiting")
        logging.shutdown()
        os._exit(1)  # worker threads may still run a simulation: do not wait for them
    except ConfigError as exc:
        log.error("cannot reach Kubernetes", error=str(exc))
        return 1
    finally:
        shutdown_offload()


async def _main(settings: Settings) -> int:
    identity = f"{settings.leader_election.pod_name}_{uuid.uuid4()}"
    client = await Client.connect(
        kubeconfig=settings.kube_client.kubeconfig,
        qps=settings.kube_client.qps,
        burst=settings.kube_client.burst,
        user_agent=f"karpy/{identity}",
    )
    # Lease renewals get their own request budget so a busy controller cannot starve them.
    election_client = Client(
        client.transport,
        qps=settings.kube_client.qps,
        burst=settings.kube_client.burst,
        host=client.host,
    )
    election = None
    if not settings.leader_election.disabled:
        election = LeaderElectionConfig(
            identity=identity,
            namespace=settings.leader_election.system_namespace,
            name=f"{COMPONENT}-leader-election",
        )
    manager = Manager(
        client=client,
        options=ManagerOptions(
            bind_address=settings.server.bind_address,
            metrics_port=settings.server.metrics_port,
            health_probe_port=settings.server.health_probe_port,
            leader_election=election,
        ),
        election_client=election_client,
    )
    # Events (one per pod per decision) get their own request budget too.
    events_client = Client(
        client.transport,
        qps=settings.kube_client.qps,
        burst=settings.kube_client.burst,
        host=client.host,
    )
    events = EventRecorder(events_client, component=COMPONENT, instance=identity)
    manager.add(events)
    cluster = Cluster(
        manager.cache,
        clock=manager.clock,
        nomination_window=nomination_window(settings.batch.max_duration.total_seconds()),
    )
    ctx = ControllerContext(
        settings=settings,
        client=client,
        manager=manager,
        events=events,
        clock=manager.clock,
        cloud_provider=build_provider(settings, client=client, cache=manager.cache),
        cluster=cluster,
        identity=identity,
    )
    for register in REGISTRATIONS:
        register(ctx)
    log.info(
        "starting karpy",
        identity=identity,
        provider=settings.provider,
        leader_election=election is not None,
        informers=len(manager.cache.informers),
    )
    try:
        await manager.run()
    finally:
        await client.close()
    return 0
