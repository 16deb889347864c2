"""Session fixtures: one real control plane per test session (see hack/controlplane.py).

The control plane runs the node lifecycle and taint-eviction controllers with the shorter test
timing of `controlplane.TEST_NODE_MONITOR` (a Node whose Lease is not renewed for 30 s becomes
NotReady). karpy's kwok simulator renews the Leases of kwok Nodes; a `kubetest.NodeLeases`
thread renews those of the static Nodes tests create, as their kubelet would.

Fixtures are synchronous (subprocess) so they do not depend on pytest-asyncio's event loops;
async tests build their own clients from ``kubeconfig``. Tests never skip because the binaries
are missing: they are built before the first test that needs them, or every such test fails
with the reason.
"""

from __future__ import annotations

import contextlib
import logging
import re
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path

import controlplane
import pytest
from controlplane import TEST_NODE_MONITOR, ControlPlane, ControlPlaneError
from kubetest import Kubectl, NodeLeases, delete_cluster_objects, delete_namespace, install_crds

from tests import file_order

_CONTROL_PLANE_FIXTURES = {"control_plane", "control_plane_no_watch_cache"}
_binaries: Path | None = None
_binaries_error: str | None = None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest test files first (tests/file_order.py), so that with `make test`'s
    `--dist loadfile --no-loadscope-reorder` the workers start on the long e2e files and the
    short ones fill the end."""
    items[:] = file_order.order(items, lambda item: item.nodeid)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the binaries before any test runs, so the build is not charged to a test timeout."""
    global _binaries, _binaries_error
    if session.config.option.collectonly:
        return
    if not any(
        _CONTROL_PLANE_FIXTURES & set(getattr(i, "fixturenames", ())) for i in session.items
    ):
        return
    missing = controlplane.missing_binaries()
    if missing:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"building control plane binaries ({', '.join(missing)} missing)")
    try:
        _binaries = controlplane.ensure_binaries()
    except ControlPlaneError as err:
        _binaries_error = str(err)


def _binary_dir() -> Path:
    if _binaries is not None:
        return _binaries
    if _binaries_error is not None:
        pytest.fail(_binaries_error, pytrace=False)
    try:
        return controlplane.ensure_binaries()
    except ControlPlaneError as err:
        pytest.fail(str(err), pytrace=False)


@contextlib.contextmanager
def _running(
    tmp_path_factory: pytest.TempPathFactory, name: str, *, watch_cache: bool = True
) -> Iterator[ControlPlane]:
    """A started control plane whose static Nodes get their Leases renewed; stopped after."""
    cp = ControlPlane(
        tmp_path_factory.mktemp(name),
        bin_dir=_binary_dir(),
        watch_cache=watch_cache,
        node_monitor=TEST_NODE_MONITOR,
    )
    try:
        cp.start()
    except ControlPlaneError as err:
        pytest.fail(f"control plane did not start: {err}", pytrace=False)
    logging.getLogger("controlplane").info("control plane timings: %s", cp.timings)
    try:
        with NodeLeases(cp.server, cp.pki.client_ssl_context()):
            yield cp
    finally:
        cp.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Point failed tests that used a control plane at its component logs."""
    report: pytest.TestReport = yield
    if report.failed:
        funcargs = getattr(item, "funcargs", {})
        for fixture in sorted(_CONTROL_PLANE_FIXTURES & set(funcargs)):
            cp = funcargs[fixture]
            report.sections.append((fixture, f"component logs: {cp.work_dir}/*.log"))
    return report


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The session's control plane: etcd, kube-apiserver, kube-scheduler, controller-manager."""
    with _running(tmp_path_factory, "controlplane") as cp:
        yield cp


@pytest.fixture(scope="session")
def control_plane_no_watch_cache(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ControlPlane]:
    """A second control plane without the apiserver watch cache, started only when asked for.

    With it, ``compact_etcd()`` makes a watch at an older resourceVersion fail with 410 Gone.
    """
    with _running(tmp_path_factory, "controlplane-nocache", watch_cache=False) as cp:
        yield cp


@pytest.fixture(scope="session")
def kubeconfig(control_plane: ControlPlane) -> str:
    return str(control_plane.kubeconfig)


@pytest.fixture(scope="session")
def kubectl(control_plane: ControlPlane) -> Kubectl:
    """``kubectl(*args, input=None, check=True, timeout=60.0) -> CompletedProcess[str]``."""
    return Kubectl(control_plane.kubectl_path, control_plane.kubeconfig)


@pytest.fixture
def namespace(kubectl: Kubectl, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (without waiting)."""
    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].rstrip("-")
    name = f"{stem or 't'}-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", name)
    yield name
    delete_namespace(kubectl, name)


@pytest.fixture
def clean_cluster(kubectl: Kubectl) -> Iterator[None]:
    """Delete cluster-scoped test objects (NodeClaims, NodePools, Nodes, node classes) before
    and after the test, stripping finalizers first. Use it explicitly or via usefixtures."""
    delete_cluster_objects(kubectl)
    yield
    delete_cluster_objects(kubectl)


@pytest.fixture(scope="session")
def crds(kubectl: Kubectl) -> None:
    """Karpenter's CRDs (manifests/crds), applied once a session and Established."""
    install_crds(kubectl)
