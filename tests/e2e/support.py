"""Manifests and waits shared by the end-to-end tests (all through kubectl).

Besides the basics (Deployments, pods, nodes, NodeClaims, events, waits), the disruption and
termination tests share: one-pod-per-node anti-affinity (`one_per_node`), PDB manifests and
the wait for a PDB to count its pods (`pdb`, `wait_pdb`), a NodePool's nodes and the wait for
a number of them (`pool_nodes`, `wait_pool_nodes`), the disrupted taint (`tainted`), and a
background sampler of how many selected pods are Ready (`ready_samples`)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any

from kubetest import Kubectl, wait_until

from tests import kit
from tests.kit import KWOK_NODECLASS_REF, LINUX_AMD64_ON_DEMAND, kwok_nodeclass

__all__ = [
    "KWOK_NODECLASS_REF",
    "ClaimWatcher",
    "bound_pods",
    "deployment",
    "events",
    "holds",
    "kwok_nodeclass",
    "nodeclaims",
    "nodepool",
    "nodes",
    "one_per_node",
    "pdb",
    "pod_ready",
    "pods",
    "pool_nodes",
    "ready_samples",
    "scale",
    "tainted",
    "wait_bound",
    "wait_for",
    "wait_nodepool_ready",
    "wait_pdb",
    "wait_pool_nodes",
]

JSON = dict[str, Any]
# The e2e NodePools: linux/amd64/on-demand kwok nodes that never consolidate unless a test asks.
nodepool = partial(kit.nodepool, requirements=LINUX_AMD64_ON_DEMAND, consolidate_after="Never")


def deployment(
    name: str,
    namespace: str,
    *,
    replicas: int,
    cpu: str = "1",
    memory: str = "1Gi",
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] | None = None,
    affinity: Mapping[str, Any] | None = None,
    spread: Sequence[Mapping[str, Any]] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> JSON:
    pod_labels = {"app": name, **(labels or {})}
    pod_spec: JSON = {
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        pod_spec["tolerations"] = list(tolerations)
    if affinity:
        pod_spec["affinity"] = dict(affinity)
    if spread:
        pod_spec["topologySpreadConstraints"] = list(spread)
    template_meta: JSON = {"labels": pod_labels}
    if annotations:
        template_meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": template_meta, "spec": pod_spec},
        },
    }


def scale(kubectl: Kubectl, namespace: str, name: str, replicas: int) -> None:
    kubectl("scale", f"deployment/{name}", f"--replicas={replicas}", f"--namespace={namespace}")


def pods(kubectl: Kubectl, namespace: str, selector: str | None = None) -> list[JSON]:
    args = ["get", "pods", f"--namespace={namespace}"]
    if selector:
        args.append(f"--selector={selector}")
    items: list[JSON] = kubectl.json(*args)["items"]
    return items


def bound_pods(kubectl: Kubectl, namespace: str, selector: str | None = None) -> list[JSON]:
    return [
        p
        for p in pods(kubectl, namespace, selector)
        if (p.get("spec") or {}).get("nodeName") and not p["metadata"].get("deletionTimestamp")
    ]


def nodeclaims(kubectl: Kubectl) -> list[JSON]:
    items: list[JSON] = kubectl.json("get", "nodeclaims.karpenter.sh")["items"]
    return items


def nodes(kubectl: Kubectl, selector: str | None = "karpenter.sh/nodepool") -> list[JSON]:
    args = ["get", "nodes"]
    if selector:
        args.append(f"--selector={selector}")
    items: list[JSON] = kubectl.json(*args)["items"]
    return items


def events(
    kubectl: Kubectl, namespace: str | None = None, *, reason: str | None = None
) -> list[JSON]:
    args = ["get", "events"]
    args.append(f"--namespace={namespace}" if namespace else "--all-namespaces")
    if reason:
        args.append(f"--field-selector=reason={reason}")
    items: list[JSON] = kubectl.json(*args)["items"]
    return items


def wait_for(
    predicate: Callable[[], Any], *, timeout: float = 120.0, message: str = "condition"
) -> Any:
    return wait_until(predicate, timeout=timeout, interval=0.5, message=message)


def holds(
    check: Callable[[], None],
    *,
    passes: Callable[[], int],
    count: int = 3,
    at_least: float = 0.0,
    timeout: float = 300.0,
    interval: float = 2.0,
) -> int:
    """Run `check` (which asserts) over and over until karpy has completed `count` more
    disruption passes than when the hold began (`passes`, e.g. `KarpyProcess.disruption_passes`)
    and at least `at_least` seconds have passed; returns the passes seen. A "nothing is
    disrupted" hold shows what it must once karpy has looked at the state a few times and done
    nothing, however long that took, so it ends on passes rather than on a fixed wall time (a
    duration the issue fixes goes in `at_least`). Fails if the passes do not come by `timeout`:
    karpy stopped evaluating, which would make the hold prove nothing."""
    start = time.monotonic()
    first = passes()
    while True:
        check()
        seen = passes() - first
        waited = time.monotonic() - start
        if seen >= count and waited >= at_least:
            return seen
        if waited >= timeout:
            raise AssertionError(
                f"{seen} of {count} disruption passes after {waited:.0f} s: the hold proves nothing"
            )
        time.sleep(interval)


def wait_bound(
    kubectl: Kubectl,
    namespace: str,
    count: int,
    *,
    selector: str | None = None,
    timeout: float = 180.0,
) -> list[JSON]:
    """Until at least `count` pods are bound; returns them."""

    def check() -> list[JSON] | None:
        found = bound_pods(kubectl, namespace, selector)
        return found if len(found) >= count else None

    result: list[JSON] = wait_for(
        check, timeout=timeout, message=f"{count} pods bound in {namespace}"
    )
    return result


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    return kit.conditions(obj).get(type_)


def wait_nodepool_ready(kubectl: Kubectl, name: str, *, timeout: float = 60.0) -> JSON:
    def check() -> JSON | None:
        pool: JSON = kubectl.json("get", "nodepool", name)
        ready = condition(pool, "Ready")
        return pool if ready is not None and ready.get("status") == "True" else None

    result: JSON = wait_for(check, timeout=timeout, message=f"NodePool {name} Ready")
    return result


def one_per_node(app: str) -> JSON:
    """Required pod anti-affinity: at most one pod labelled `app=<app>` per node."""
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": app}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }


def pdb(name: str, namespace: str, *, app: str, max_unavailable: int | str = 1) -> JSON:
    """A PodDisruptionBudget over the pods labelled `app=<app>`."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": app}}},
    }


def wait_pdb(
    kubectl: Kubectl, namespace: str, name: str, *, healthy: int, allowed: int, timeout: float = 90
) -> JSON:
    """Until the PDB's status counts `healthy` pods and allows `allowed` disruptions."""

    def check() -> JSON | None:
        found: JSON = kubectl.json("get", "pdb", name, f"--namespace={namespace}")
        status = found.get("status") or {}
        ok = status.get("currentHealthy") == healthy and status.get("disruptionsAllowed") == allowed
        return found if ok else None

    result: JSON = wait_for(check, timeout=timeout, message=f"PDB {name} to count {healthy} pods")
    return result


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """Ready and not terminating."""
    ready = condition(pod, "Ready")
    return (
        not pod["metadata"].get("deletionTimestamp")
        and ready is not None
        and ready.get("status") == "True"
    )


@contextmanager
def ready_samples(kubectl: Kubectl, namespace: str, selector: str) -> Iterator[list[int]]:
    """How many selected pods are Ready (and not terminating), sampled every 0.3 s in the
    background until the block ends; yields the list of samples."""
    samples: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            with suppress(Exception):  # a failed poll is just a missing sample
                samples.append(sum(pod_ready(p) for p in pods(kubectl, namespace, selector)))
            stop.wait(0.3)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join(10)


def pool_nodes(kubectl: Kubectl, pool: str) -> list[JSON]:
    """The Nodes of NodePool `pool` (terminating ones included)."""
    return nodes(kubectl, selector=f"karpenter.sh/nodepool={pool}")


def wait_pool_nodes(
    kubectl: Kubectl, pool: str, count: int, *, timeout: float = 120.0
) -> list[JSON]:
    """Until NodePool `pool` has exactly `count` Nodes; returns them."""
    result: list[JSON] = wait_for(
        lambda: len(found := pool_nodes(kubectl, pool)) == count and found,
        timeout=timeout,
        message=f"{count} nodes in NodePool {pool}",
    )
    return result


class ClaimWatcher:
    """Polls NodeClaims in the background (every 0.2 s) and records, per name, when it was
    first seen Initialized and first seen deleting (monotonic seconds; `deleting` keeps the
    order they started), its last annotations, and the most seen deleting at once. A deletion
    over between two polls (a kubectl call takes a second on a loaded machine) is recorded
    when the NodeClaim is first seen gone."""

    def __init__(self, kubectl: Kubectl) -> None:
        self.kubectl = kubectl
        self.initialized: dict[str, float] = {}
        self.deleting: dict[str, float] = {}
        self.annotations: dict[str, dict[str, str]] = {}
        self.max_deleting = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ClaimWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def saw_deleting(self, names: Iterable[str]) -> bool:
        """Whether every one of `names` has been recorded deleting. A test that saw a deletion
        itself waits for this before leaving the `with` block, or the watcher may stop first."""
        return all(name in self.deleting for name in names)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                claims = nodeclaims(self.kubectl)
            except Exception:  # a transient kubectl failure is not a finding
                self._stop.wait(0.2)
                continue
            now = time.monotonic()
            deleting = 0
            present = {c["metadata"]["name"] for c in claims}
            for gone in self.annotations.keys() - present:
                self.deleting.setdefault(gone, now)
            for c in claims:
                name = c["metadata"]["name"]
                self.annotations[name] = dict(c["metadata"].get("annotations") or {})
                if (condition(c, "Initialized") or {}).get("status") == "True":
                    self.initialized.setdefault(name, now)
                if c["metadata"].get("deletionTimestamp"):
                    deleting += 1
                    self.deleting.setdefault(name, now)
            self.max_deleting = max(self.max_deleting, deleting)
            self._stop.wait(0.2)


def tainted(node: Mapping[str, Any]) -> bool:
    """The node carries `karpenter.sh/disrupted` (a disruption command holds it)."""
    taints = (node.get("spec") or {}).get("taints") or ()
    return any(t.get("key") == "karpenter.sh/disrupted" for t in taints)


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True)[:4000]


def elapsed(start: float) -> float:
    return time.monotonic() - start


def web_pod(namespace: str, name: str = "web") -> JSON:
    """One pod asking for 1 CPU and 1Gi, whose deletion need not wait the 30 s a kubelet would
    give it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": name,
                    "image": "nginx",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                }
            ],
        },
    }


def launched_claim(kubectl: Kubectl, provider_id_prefix: str) -> JSON | None:
    """The first NodeClaim whose providerID is a cloud's (`aws:///`, `azure:///`), if any."""
    for claim in nodeclaims(kubectl):
        if (claim.get("status") or {}).get("providerID", "").startswith(provider_id_prefix):
            return claim
    return None


@contextmanager
def kube_dns_service(kubectl: Kubectl, cluster_ip: str | None = None) -> Iterator[str]:
    """CoreDNS's Service as EKS and AKS name it (`kube-system/kube-dns`), at `cluster_ip` or
    one the apiserver allocates; yields its ClusterIP and deletes it afterwards."""
    spec: JSON = {"ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}
    if cluster_ip is not None:
        spec["clusterIP"] = cluster_ip
    kubectl("delete", "service", "kube-dns", "-n", "kube-system", "--ignore-not-found")
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system"},
            "spec": spec,
        }
    )
    try:
        service = kubectl.json("get", "service", "kube-dns", "-n", "kube-system")
        yield str(service["spec"]["clusterIP"])
    finally:
        kubectl("delete", "service", "kube-dns", "-n", "kube-system", "--ignore-not-found")
