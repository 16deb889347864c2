"""Where the apiserver is and how to authenticate: kubeconfig or in-cluster service account.

kubernetes_asyncio parses kubeconfigs (contexts, certificates, tokens, exec plugins) and the
in-cluster files; this module turns its result into an `AiohttpTransport`. The lookup order is
controller-runtime's: an explicit path, `$KUBECONFIG`, the in-cluster service account, then
`~/.kube/config`. Impersonation (`as` / `as-groups` in a kubeconfig user, as kubectl honours)
is passed on as `Impersonate-*` headers.
"""

from __future__ import annotations

import os
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config import ConfigException
from kubernetes_asyncio.config.incluster_config import (
    SERVICE_HOST_ENV_NAME,
    InClusterConfigLoader,
)
from kubernetes_asyncio.config.kube_config import KubeConfigLoader, KubeConfigMerger

from karpy.kube.errors import ConfigError
from karpy.kube.transport import AiohttpTransport

__all__ = ["ConnectionConfig", "load_config"]

_TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"
_CA_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
_EXEC_REFRESH_SECONDS = 60.0


@dataclass(slots=True)
class ConnectionConfig:
    """A resolved apiserver endpoint with credentials; `transport()` makes a connection pool."""

    server: str
    source: str
    configuration: Any  # kubernetes_asyncio Configuration (untyped)
    loader: Any = None  # KubeConfigLoader when credentials may need refreshing
    impersonate_user: str | None = None
    impersonate_groups: tuple[str, ...] = ()
    _next_exec_refresh: float = field(default=0.0, repr=False)

    def ssl_context(self) -> ssl.SSLContext | None:
        cfg = self.configuration
        if not self.server.startswith("https"):
            return None
        context = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
        if cfg.cert_file:
            context.load_cert_chain(cfg.cert_file, cfg.key_file)
        if not cfg.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    async def headers(self) -> list[tuple[str, str]]:
        """Authorization and impersonation headers, refreshing expiring tokens first."""
        headers: list[tuple[str, str]] = []
        loader = self.loader
        if loader is not None and "exec" in (loader._user or {}):
            now = time.monotonic()
            if now >= self._next_exec_refresh:
                await loader.load_from_exec_plugin()
                self.configuration.api_key["BearerToken"] = loader.token
                self._next_exec_refresh = now + _EXEC_REFRESH_SECONDS
        token = await self.configuration.get_api_key_with_prefix("BearerToken")
        if token:
            headers.append(("Authorization", token))
        if self.impersonate_user:
            headers.append(("Impersonate-User", self.impersonate_user))
        headers.extend(("Impersonate-Group", group) for group in self.impersonate_groups)
        return headers

    def transport(
        self, *, user_agent: str = "karpy", connection_limit: int = 200
    ) -> AiohttpTransport:
        cfg = self.configuration
        return AiohttpTransport(
            base_url=self.server,
            ssl_context=self.ssl_context(),
            server_hostname=getattr(cfg, "tls_server_name", None) or None,
            headers=self.headers,
            user_agent=user_agent,
            connection_limit=connection_limit,
        )


def _user_entry(merger: KubeConfigMerger, loader: KubeConfigLoader) -> Mapping[str, Any]:
    """The current context's `user` mapping (where kubectl keeps `as` and `as-groups`)."""
    context = loader.current_context or {}
    user_name = (context.get("context") or {}).get("user")
    users = merger.config.safe_get("users") if merger.config is not None else None
    if not user_name or not isinstance(users, list):
        return {}
    for entry in users:
        if isinstance(entry, Mapping) and entry.get("name") == user_name:
            value = entry.get("user") or {}
            return value if isinstance(value, Mapping) else {}
    return {}


def _check_paths(paths: str) -> None:
    listed = [p for p in paths.split(os.pathsep) if p]
    if not any(Path(p).expanduser().exists() for p in listed):
        raise ConfigError(f"kubeconfig not found: {paths}")


def _default_kubeconfig() -> str | None:
    default = Path("~/.kube/config").expanduser()
    return str(default) if default.exists() else None


async def _from_kubeconfig(paths: str, context: str | None) -> ConnectionConfig:
    _check_paths(paths)
    try:
        merger = KubeConfigMerger(paths)
        loader = KubeConfigLoader(
            config_dict=merger.config, config_base_path=None, active_context=context
        )
        configuration = type.__call__(Configuration)
        await loader.load_and_set(configuration)
    except (ConfigException, KeyError, AssertionError, OSError, TypeError, ValueError) as exc:
        raise ConfigError(f"cannot load kubeconfig {paths}: {exc}") from exc
    user = _user_entry(merger, loader)
    groups = user.get("as-groups") or ()
    return ConnectionConfig(
        server=configuration.host,
        source=f"kubeconfig {paths}",
        configuration=configuration,
        loader=loader,
        impersonate_user=user.get("as") or None,
        impersonate_groups=tuple(str(g) for g in groups),
    )


def _in_cluster() -> ConnectionConfig:
    configuration = type.__call__(Configuration)
    try:
        InClusterConfigLoader(token_filename=_TOKEN_FILE, cert_filename=_CA_FILE).load_and_set(
            configuration
        )
    except ConfigException as exc:
        raise ConfigError(f"in-cluster configuration unusable: {exc}") from exc
    return ConnectionConfig(
        server=configuration.host, source="in-cluster service account", configuration=configuration
    )


async def load_config(
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ConnectionConfig:
    """Resolve the apiserver connection (explicit path, $KUBECONFIG, in-cluster, ~/.kube/config)."""
    env = os.environ if env is None else env
    if kubeconfig:
        return await _from_kubeconfig(kubeconfig, context)
    if env.get("KUBECONFIG"):
        return await _from_kubeconfig(env["KUBECONFIG"], context)
    if env.get(SERVICE_HOST_ENV_NAME):
        return _in_cluster()
    default = _default_kubeconfig()
    if default is not None:
        return await _from_kubeconfig(default, context)
    raise ConfigError(
        "no Kubernetes configuration: set KUBECONFIG (or --kubeconfig), run in a cluster, "
        "or create ~/.kube/config"
    )
