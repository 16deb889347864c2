"""`karpy run`: wire settings, the Kubernetes client, shared informers, leader election and
controllers into one manager, and run it until SIGTERM.

To add an informer, append its resource to `CACHED_RESOURCES` (and grant `list`/`watch` in the
chart's ClusterRole, `manifests/charts/karpy/templates/clusterrole.yaml`). karpy's extension
kinds are declared `optional=True` on their `CustomResource`: a cluster with only Karpenter's
CRDs then runs as if they had no objects (`ABSENT_CRD_HINT` is logged once). `_main` fills one
`ControllerContext` (settings, client, cache, events, clock, cloud provider, cluster state,
manager) and hands it to the provider plugin (its own controllers), then to each of
`REGISTRATIONS`: the informers, then every area's `register(ctx)` (`karpy.controllers`).
Controllers run only on the elected leader; caches and the cluster state on every replica. The
cloud provider is the plugin registered for `PROVIDER` (`karpy.cloudprovider.registry`), wrapped
in the metrics decorator; the operator knows nothing else about it.

Exit status: 0 after a graceful stop, 1 on a fatal error or when the leader lease is lost (the
process exits at once so a restart comes back as a standby), 2 for invalid settings.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import uuid
from collections.abc import Callable

import structlog
import uvloop

from karpy.apis.descriptors import CRD_RESOURCES
from karpy.cloudprovider.metrics import MetricsCloudProvider
from karpy.cloudprovider.registry import ProviderPlugin, ProviderUnavailableError, get_plugin
from karpy.cloudprovider.types import CloudProvider
from karpy.controllers import ControllerContext, register_all
from karpy.exitcodes import FAILURE, INVALID, OK
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.errors import ConfigError, KubeError
from karpy.kube.events import EventRecorder
from karpy.kube.leaderelection import LeaderElectionConfig
from karpy.kube.leasepeers import leases_elsewhere
from karpy.kube.logconfig import configure_logging
from karpy.kube.manager import LeaderElectionLostError, Manager, ManagerOptions
from karpy.kube.offload import shutdown_offload
from karpy.kube.resources import (
    CSINODES,
    DAEMONSETS,
    LIMITRANGES,
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
from karpy.settings import SETTINGS, Settings, SettingsError, load_settings
from karpy.state import Cluster, nomination_window

__all__ = [
    "CACHED_RESOURCES",
    "REGISTRATIONS",
    "ProviderWrapper",
    "add_arguments",
    "build_provider",
    "register_informers",
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
    LIMITRANGES,
    CSINODES,
    VOLUMEATTACHMENTS,
    *CRD_RESOURCES,
)
"""Resources every replica keeps in its cache (RBAC: list and watch each)."""

COMPONENT = "karpenter"
# Karpenter's leader Lease name (its --leader-election-name default), in SYSTEM_NAMESPACE: a
# Karpenter and a karpy in one namespace share one Lease, so only one of them acts.
LEADER_LEASE = f"{COMPONENT}-leader-election"
PEER_CHECK_TIMEOUT = 10.0
"""Event source component and leader-lease name prefix, as Karpenter's."""

ABSENT_CRD_HINT = (
    "to use it, install karpy's CRDs with the karpy-crd chart (manifests/charts/karpy-crd), "
    "or apply its file from `karpy crds --output-dir DIR` (named <group>_<plural>.yaml)"
)
"""How to get an extension kind's CRD (logged once when the cluster lacks it, as it does with
Karpenter's karpenter-crd chart)."""


def register_informers(ctx: ControllerContext) -> None:
    """Create the shared informers (they start with the manager, on every replica)."""
    for resource in CACHED_RESOURCES:
        ctx.informer(resource)


REGISTRATIONS: list[Callable[[ControllerContext], None]] = [
    register_informers,
    register_all,
]
"""Run in order at start-up, after the provider plugin's own registration; each may add
informers, indexers and runnables."""

ProviderWrapper = Callable[[CloudProvider], CloudProvider]
"""A decorator applied to the provider the plugin built (tests inject faults with one)."""


async def build_provider(
    plugin: ProviderPlugin,
    settings: Settings,
    *,
    client: Client,
    cache: Cache,
    wrap: ProviderWrapper | None = None,
) -> tuple[CloudProvider, CloudProvider]:
    """The plugin's provider as built, and as the controllers see it (`wrap`, then metrics)."""
    inner = await plugin.build(settings, client=client, cache=cache)
    outer = wrap(inner) if wrap is not None else inner
    return inner, MetricsCloudProvider(outer)


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


def run(args: argparse.Namespace, *, wrap: ProviderWrapper | None = None) -> int:
    """`karpy run`; `wrap` decorates the provider (a test seam, never set in production)."""
    try:
        settings = load_settings(_overrides(args))
    except SettingsError as exc:
        print(f"karpy run: {exc}", file=sys.stderr)
        return INVALID
    try:
        plugin = get_plugin(settings.provider)
        plugin.check(settings)
    except ProviderUnavailableError as exc:
        print(f"karpy run: {exc}", file=sys.stderr)
        return INVALID
    configure_logging(settings.log_level)
    try:
        return uvloop.run(_main(settings, plugin, wrap))
    except LeaderElectionLostError:
        log.error("leader election lost; exiting")
        logging.shutdown()
        os._exit(FAILURE)  # worker threads may still run a simulation: do not wait for them
    except ConfigError as exc:
        log.error("cannot reach Kubernetes", error=str(exc))
        return FAILURE
    finally:
        shutdown_offload()


async def warn_about_other_leaders(client: Client, *, namespace: str) -> None:
    """Warn about Karpenter's (or another karpy's) leader Lease in another namespace: election
    only keeps replicas of one installation from acting together, so two installations in
    different namespaces would both act on the same NodeClaims."""
    try:
        peers = await asyncio.wait_for(
            leases_elsewhere(client, name=LEADER_LEASE, namespace=namespace), PEER_CHECK_TIMEOUT
        )
    except (KubeError, TimeoutError) as exc:
        log.debug("could not look for other NodeClaim controllers' Leases", error=str(exc))
        return
    for peer in peers:
        log.warning(
            "found another NodeClaim controller's leader Lease in another namespace; if that "
            "controller runs, both act on the same NodePools and NodeClaims: stop one",
            lease=f"{peer.namespace}/{LEADER_LEASE}",
            holder=peer.holder,
            renewTime=peer.renew_time,
            namespace=namespace,
        )


async def _main(settings: Settings, plugin: ProviderPlugin, wrap: ProviderWrapper | None) -> int:
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
            name=LEADER_LEASE,
        )
    await warn_about_other_leaders(client, namespace=settings.leader_election.system_namespace)
    manager = Manager(
        client=client,
        cache=Cache(client, absent_hint=ABSENT_CRD_HINT),
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
        node_overlays=settings.feature_gates.node_overlay,
        capacity_buffers=settings.feature_gates.capacity_buffer,
    )
    inner, provider = await build_provider(
        plugin, settings, client=client, cache=manager.cache, wrap=wrap
    )
    ctx = ControllerContext(
        settings=settings,
        client=client,
        manager=manager,
        events=events,
        clock=manager.clock,
        cloud_provider=provider,
        nodeclasses=plugin.nodeclasses,
        cluster=cluster,
        identity=identity,
    )
    plugin.register(ctx, inner)
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
        # After every controller stopped: the provider's API clients, then karpy's own.
        await plugin.close(inner)
        await client.close()
    return OK
