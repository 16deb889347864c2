"""Optional resources against a real apiserver: a kind whose CRD is not installed syncs empty
(a required one never syncs), says so once, and is picked up when its CRD appears; deleting the
CRD empties the cache again.

The test installs and deletes a CRD of its own (`widgets.optional.karpy.test`), so no other
test's CRDs are touched."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import structlog
from kubetest import Kubectl, async_wait_until

from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.informer import HandlerFuncs
from karpy.kube.resources import Resource, object_key

GROUP = "optional.karpy.test"
CRD_NAME = f"widgets.{GROUP}"
WIDGETS = Resource(GROUP, "v1", "Widget", "widgets", namespaced=False, optional=True)
REQUIRED_WIDGETS = Resource(GROUP, "v1", "Widget", "widgets", namespaced=False)
RECHECK = 1.0


def widget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets"},
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def widget(name: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name}}


def install(kubectl: Kubectl) -> None:
    kubectl.apply(widget_crd())
    kubectl("wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=60s", timeout=90)


def uninstall(kubectl: Kubectl) -> None:
    kubectl("delete", "crd", CRD_NAME, "--ignore-not-found", "--wait=true", timeout=120)


def absent_lines(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e.get("crd") == CRD_NAME and "is not served" in e["event"]]


async def test_missing_optional_crd_syncs_empty_and_is_picked_up_later(
    client: Client, kubectl: Kubectl
) -> None:
    uninstall(kubectl)
    name = f"w-{uuid.uuid4().hex[:6]}"
    try:
        with structlog.testing.capture_logs() as logs:
            cache = Cache(client, absent_recheck=RECHECK, absent_hint="try `install widgets`")
            informer = cache.informer(WIDGETS)
            seen: list[str] = []
            gone: list[str] = []
            informer.add_handler(
                HandlerFuncs(
                    add=lambda o: seen.append(object_key(o)),
                    delete=lambda o: gone.append(object_key(o)),
                )
            )
            stop = asyncio.Event()
            runner = asyncio.create_task(cache.start(stop))
            try:
                await asyncio.wait_for(cache.wait_for_sync(), 30)
                assert informer.list() == []
                assert informer.served is False
                await asyncio.sleep(4 * RECHECK)  # several re-checks: still one line
                lines = absent_lines(logs)
                assert len(lines) == 1, lines
                assert lines[0]["log_level"] == "info"
                assert "try `install widgets`" in lines[0]["event"]
                assert informer.reflector.lists == 0

                await asyncio.to_thread(install, kubectl)
                await asyncio.to_thread(kubectl.apply, widget(name))

                async def picked_up() -> bool:
                    return informer.get(name) is not None

                await async_wait_until(picked_up, timeout=60, message="the widget cached")
                assert informer.served is True
                assert seen == [name]
                assert any(e["event"] == "optional resource now served; watching it" for e in logs)

                await asyncio.to_thread(uninstall, kubectl)  # deletes the widget with it

                async def emptied() -> bool:
                    return informer.served is False and not informer.list()

                await async_wait_until(emptied, timeout=60, message="the cache emptied")
                assert gone == [name]
                assert len(absent_lines(logs)) == 2  # once more: it went away again
            finally:
                stop.set()
                await runner
    finally:
        await asyncio.to_thread(uninstall, kubectl)


async def test_missing_required_crd_never_syncs(client: Client, kubectl: Kubectl) -> None:
    """The switch is what makes the difference: without it the informer waits, as for
    Karpenter's own kinds."""
    uninstall(kubectl)
    cache = Cache(client)
    informer = cache.informer(REQUIRED_WIDGETS)
    stop = asyncio.Event()
    runner = asyncio.create_task(cache.start(stop))
    try:
        await asyncio.sleep(3)
        assert not cache.has_synced()
        assert informer.served is None
        assert informer.reflector.last_error is not None
        assert "404" in str(informer.reflector.last_error)
    finally:
        stop.set()
        await runner
