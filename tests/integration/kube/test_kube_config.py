"""In-cluster configuration against the real apiserver: a service-account token and CA in a
directory standing in for the kubelet's mount, `KUBERNETES_SERVICE_HOST/PORT` in the env."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from controlplane import ControlPlane
from kubetest import Kubectl

from karpy.kube.client import Client
from karpy.kube.config import load_config
from karpy.kube.errors import ConfigError, ForbiddenError
from karpy.kube.resources import PODS


def service_account_mount(
    tmp_path: Path, control_plane: ControlPlane, kubectl: Kubectl, namespace: str
) -> tuple[Path, dict[str, str]]:
    kubectl("create", "serviceaccount", "probe", "-n", namespace)
    token = kubectl("create", "token", "probe", "-n", namespace).stdout.strip()
    mount = tmp_path / "serviceaccount"
    mount.mkdir()
    (mount / "token").write_text(token + "\n")
    (mount / "ca.crt").write_bytes(control_plane.pki.ca_cert.read_bytes())
    server = urlsplit(control_plane.server)
    env = {
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port),
    }
    return mount, env


async def test_in_cluster_authenticates_as_the_service_account(
    tmp_path: Path, control_plane: ControlPlane, kubectl: Kubectl, namespace: str
) -> None:
    mount, env = service_account_mount(tmp_path, control_plane, kubectl, namespace)
    config = await load_config(env=env, service_account_dir=mount)
    assert config.source == "in-cluster service account"
    async with Client(config.transport()) as client:
        # The token has no RBAC grants: a 403 naming the account proves TLS and the token worked.
        with pytest.raises(ForbiddenError, match=f"system:serviceaccount:{namespace}:probe"):
            await client.list(PODS, namespace=namespace)


async def test_in_cluster_errors_name_what_is_missing(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(ConfigError, match=r"ca\.crt"):
        await load_config(env=env, service_account_dir=tmp_path)
    (tmp_path / "ca.crt").write_text("x")
    with pytest.raises(ConfigError, match="token"):
        await load_config(env=env, service_account_dir=tmp_path)
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_PORT"):
        await load_config(env={"KUBERNETES_SERVICE_HOST": "h"}, service_account_dir=tmp_path)


def test_in_cluster_does_not_load_the_kubeconfig_library(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("x")
    (tmp_path / "token").write_text("t")
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        import karpy.cli, karpy.operator
        from karpy.kube.config import load_config
        env = {{"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}}
        config = asyncio.run(load_config(env=env, service_account_dir=Path({str(tmp_path)!r})))
        print(config.server, "kubernetes_asyncio" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout
    assert out.split() == ["https://[fd00::1]:6443", "False"]
