"""karpy's controller runtime: the parts of client-go and controller-runtime Python lacks.

It knows nothing about Karpenter. The pieces, in dependency order:

- `clock`: real and fake clocks; every delay goes through one.
- `errors`, `transport`, `config`, `client`: a raw-dict Kubernetes client with QPS limits,
  timeouts, typed errors and retries that never duplicate a create. `faults` wraps the
  transport to inject failures in tests.
- `resources`: descriptors (`PODS`, `NODES`, ...; CRDs are declared by their owners).
- `store`, `transforms`, `reflector`, `informer`, `cache`: shared informers with indexes,
  objects trimmed on ingest.
- `ratelimit`, `workqueue`, `controller`: client-go work queues and controller-runtime
  reconcile loops.
- `leaderelection`, `events`, `offload`, `logconfig`, `metrics`, `manager`: running it all.
"""

from __future__ import annotations

from karpy.kube.cache import Cache
from karpy.kube.client import Client, ObjectList, PatchType, RetryPolicy, WatchEvent
from karpy.kube.clock import Clock, FakeClock, RealClock
from karpy.kube.controller import Controller, EnqueueHandler, Result, TerminalError
from karpy.kube.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidError,
    KubeError,
    NotFoundError,
    OutcomeUnknownError,
    ServerError,
    TooManyRequestsError,
    TransportError,
)
from karpy.kube.events import NORMAL, WARNING, EventRecorder
from karpy.kube.informer import EventHandler, HandlerFuncs, Informer
from karpy.kube.leaderelection import LeaderElectionConfig, LeaderElector
from karpy.kube.manager import LeaderElectionLostError, Manager, ManagerOptions, Runnable
from karpy.kube.offload import run_off_loop
from karpy.kube.resources import NODES, PODS, Resource, object_key, split_key
from karpy.kube.store import INDEX_NODE_NAME, INDEX_PROVIDER_ID, Store, field_indexer
from karpy.kube.workqueue import RateLimitingQueue, ShutDown, WorkQueue

__all__ = [
    "INDEX_NODE_NAME",
    "INDEX_PROVIDER_ID",
    "NODES",
    "NORMAL",
    "PODS",
    "WARNING",
    "AlreadyExistsError",
    "ApiError",
    "Cache",
    "Client",
    "Clock",
    "ConflictError",
    "Controller",
    "EnqueueHandler",
    "EventHandler",
    "EventRecorder",
    "FakeClock",
    "ForbiddenError",
    "GoneError",
    "HandlerFuncs",
    "Informer",
    "InvalidError",
    "KubeError",
    "LeaderElectionConfig",
    "LeaderElectionLostError",
    "LeaderElector",
    "Manager",
    "ManagerOptions",
    "NotFoundError",
    "ObjectList",
    "OutcomeUnknownError",
    "PatchType",
    "RateLimitingQueue",
    "RealClock",
    "Resource",
    "Result",
    "RetryPolicy",
    "Runnable",
    "ServerError",
    "ShutDown",
    "Store",
    "TerminalError",
    "TooManyRequestsError",
    "TransportError",
    "WatchEvent",
    "WorkQueue",
    "field_indexer",
    "object_key",
    "run_off_loop",
    "split_key",
]
