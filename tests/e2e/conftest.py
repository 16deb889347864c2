"""End-to-end fixtures: the session control plane with karpy's CRDs, real `karpy run`
processes (PROVIDER=kwok) and kwok NodeClasses/NodePools per test.

- `crds` (session, from tests/conftest.py): `manifests/crds` applied and Established.
- `karpy_factory`: starts `karpy run` subprocesses with settings overrides
  (`karpy_factory({"REGISTRATION_TIMEOUT": "20s"})`, leader election off unless
  `DISABLE_LEADER_ELECTION="false"`); every process is stopped after the test and its log tail
  is attached to a failing test's report.
- `karpy`: one started, ready process with the default settings.
- `kwok_pool`: creates a KWOKNodeClass and a NodePool of the same name
  (`kwok_pool("default", limits={"cpu": "20"})`).

Cluster-scoped objects are removed before and after each test (`clean_cluster`), after the
karpy processes have stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from kubetest import Kubectl

from tests.e2e.karpy_process import KarpyProcess
from tests.e2e.support import kwok_nodeclass, nodepool, wait_nodepool_ready

LEASE = "karpenter-leader-election"
KarpyFactory = Callable[..., KarpyProcess]
PoolFactory = Callable[..., dict[str, Any]]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Show the karpy logs of a failed test."""
    report: pytest.TestReport = yield
    if report.failed:
        for process in getattr(item, "_karpy_processes", ()):
            report.sections.append(
                (
                    f"karpy log {process.name} ({process.log_path})",
                    process.log_tail(150),
                )
            )
    return report


@pytest.fixture
def karpy_factory(
    request: pytest.FixtureRequest,
    kubeconfig: str,
    kubectl: Kubectl,
    tmp_path: Path,
    crds: None,
    clean_cluster: None,
) -> Iterator[KarpyFactory]:
    started: list[KarpyProcess] = []
    request.node._karpy_processes = started

    def make(
        settings: Mapping[str, str] | None = None,
        *,
        start: bool = True,
        ready: bool = True,
    ) -> KarpyProcess:
        process = KarpyProcess(
            kubeconfig=kubeconfig,
            log_path=tmp_path / f"karpy-{len(started)}.log",
            settings=dict(settings or {}),
        )
        started.append(process)
        if start:
            process.start()
            if ready:
                process.wait_ready()
        return process

    yield make
    for process in started:
        process.stop()
    if any(p.settings.get("DISABLE_LEADER_ELECTION") == "false" for p in started):
        kubectl("delete", "lease", LEASE, "--namespace=kube-system", "--ignore-not-found")


@pytest.fixture
def karpy(karpy_factory: KarpyFactory) -> KarpyProcess:
    """One `karpy run` with default settings, ready."""
    return karpy_factory()


@pytest.fixture
def kwok_pool(kubectl: Kubectl, crds: None, clean_cluster: None) -> PoolFactory:
    """Create a KWOKNodeClass and a NodePool named `name`; `ready=True` waits for the NodePool
    to be Ready (which needs a running karpy)."""

    def make(
        name: str = "default",
        *,
        delay: str | None = None,
        ready: bool = True,
        **spec: Any,
    ) -> dict[str, Any]:
        kubectl.apply(kwok_nodeclass(name, delay=delay))
        pool = nodepool(name, nodeclass=name, **spec)
        kubectl.apply(pool)
        if ready:
            return wait_nodepool_ready(kubectl, name)
        return pool

    return make
