"""Where the apiserver is and how to authenticate: kubeconfig or in-cluster service account.

In a pod (the deployed case) the service-account token, CA and `KUBERNETES_SERVICE_HOST/PORT`
are read directly; kubernetes_asyncio, which costs tens of MB per process, is imported only to
parse kubeconfig files (contexts, certificates, tokens, exec plugins). The lookup order is
controller-runtime's: an explicit path, `$KUBECONFIG`, the in-cluster service account, then
`~/.kube/config`. Impersonation (`as` / `as-groups` in a kubeconfig user, as kubectl honours)
is passed on as `Impersonate-*` headers.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from karpy.kube.errors import ConfigError
from karpy.kube.transport import AiohttpTransport

__all__ = ["SERVICE_ACCOUNT_DIR", "ConnectionConfig", "load_config"]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where the kubelet mounts the pod's service-account `token` and `ca.crt`."""

_SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
_SERVICE_PORT_ENV = "KUBERNETES_SERVICE_PORT"
_TOKEN_REFRESH_SECONDS = 60.0
"""Bound service-account tokens rotate on disk; exec-plugin tokens expire: re-read this often."""

TokenSource = Callable[[], Awaitable[str | None]]
"""Returns the `Authorization` header value (`Bearer ...`), or None to send none."""


@dataclass(slots=True)
class ConnectionConfig:
    """A resolved apiserver endpoint with credentials; `transport()` makes a connection pool."""

    server: str
    source: str
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify_ssl: bool = True
    tls_server_name: str | None = None
    token: TokenSource | None = None
    impersonate_user: str | None = None
    impersonate_groups: tuple[str, ...] = ()

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.server.startswith("https"):
            return None
        context = ssl.create_default_context(cafile=self.ca_file or None)
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        if not self.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    async def headers(self) -> list[tuple[str, str]]:
        """Authorization and impersonation headers, refreshing expiring tokens first."""
        headers: list[tuple[str, str]] = []
        if self.token is not None and (token := await self.token()):
            headers.append(("Authorization", token))
        if self.impersonate_user:
            headers.append(("Impersonate-User", self.impersonate_user))
        headers.extend(("Impersonate-Group", group) for group in self.impersonate_groups)
        return headers

    def transport(
        self, *, user_agent: str = "karpy", connection_limit: int = 200
    ) -> AiohttpTransport:
        return AiohttpTransport(
            base_url=self.server,
            ssl_context=self.ssl_context(),
            server_hostname=self.tls_server_name or None,
            headers=self.headers,
            user_agent=user_agent,
            connection_limit=connection_limit,
        )


# -- in-cluster -----------------------------------------------------------------------------------


class _TokenFile:
    """The service-account token, re-read from disk every minute (the kubelet rotates it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._value = self._read()
        self._read_at = time.monotonic()

    def _read(self) -> str:
        try:
            token = self.path.read_text().strip()
        except OSError as exc:
            raise ConfigError(
                f"in-cluster configuration unusable: token {self.path}: {exc}"
            ) from exc
        if not token:
            raise ConfigError(f"in-cluster configuration unusable: token {self.path} is empty")
        return token

    async def __call__(self) -> str | None:
        now = time.monotonic()
        if now - self._read_at >= _TOKEN_REFRESH_SECONDS:
            self._read_at = now
            # On a failed read keep the last good token; the apiserver says so if it expired.
            with contextlib.suppress(ConfigError):
                self._value = self._read()
        return f"Bearer {self._value}"


def _in_cluster(env: Mapping[str, str], directory: Path) -> ConnectionConfig:
    host = env.get(_SERVICE_HOST_ENV, "")
    port = env.get(_SERVICE_PORT_ENV, "")
    if not host or not port:
        raise ConfigError(
            f"in-cluster configuration unusable: {_SERVICE_HOST_ENV} and {_SERVICE_PORT_ENV} "
            "must both be set"
        )
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass  # a DNS name
    ca = directory / "ca.crt"
    if not ca.is_file():
        raise ConfigError(f"in-cluster configuration unusable: CA certificate {ca} not found")
    return ConnectionConfig(
        server=f"https://{host}:{port}",
        source="in-cluster service account",
        ca_file=str(ca),
        token=_TokenFile(directory / "token"),
    )


# -- kubeconfig -----------------------------------------------------------------------------------


def _check_paths(paths: str) -> None:
    listed = [p for p in paths.split(os.pathsep) if p]
    if not any(Path(p).expanduser().exists() for p in listed):
        raise ConfigError(f"kubeconfig not found: {paths}")


def _default_kubeconfig() -> str | None:
    default = Path("~/.kube/config").expanduser()
    return str(default) if default.exists() else None


def _user_entry(config: Any, current_context: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The current context's `user` mapping (where kubectl keeps `as` and `as-groups`)."""
    user_name = ((current_context or {}).get("context") or {}).get("user")
    users = config.safe_get("users") if config is not None else None
    if not user_name or not isinstance(users, list):
        return {}
    for entry in users:
        if isinstance(entry, Mapping) and entry.get("name") == user_name:
            value = entry.get("user") or {}
            return value if isinstance(value, Mapping) else {}
    return {}


async def _from_kubeconfig(paths: str, context: str | None) -> ConnectionConfig:
    _check_paths(paths)
    # Imported here: the library is large and a deployed replica never reads a kubeconfig.
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config import ConfigException
    from kubernetes_asyncio.config.kube_config import KubeConfigLoader, KubeConfigMerger

    try:
        merger = KubeConfigMerger(paths)
        loader = KubeConfigLoader(
            config_dict=merger.config, config_base_path=None, active_context=context
        )
        configuration = type.__call__(Configuration)
        await loader.load_and_set(configuration)
    except (ConfigException, KeyError, AssertionError, OSError, TypeError, ValueError) as exc:
        raise ConfigError(f"cannot load kubeconfig {paths}: {exc}") from exc
    user = _user_entry(merger.config, loader.current_context)
    groups = user.get("as-groups") or ()
    return ConnectionConfig(
        server=configuration.host,
        source=f"kubeconfig {paths}",
        ca_file=configuration.ssl_ca_cert or None,
        cert_file=configuration.cert_file or None,
        key_file=configuration.key_file or None,
        verify_ssl=bool(configuration.verify_ssl),
        tls_server_name=getattr(configuration, "tls_server_name", None) or None,
        token=_kubeconfig_token(configuration, loader),
        impersonate_user=user.get("as") or None,
        impersonate_groups=tuple(str(g) for g in groups),
    )


def _kubeconfig_token(configuration: Any, loader: Any) -> TokenSource:
    """The kubeconfig user's bearer token; an exec plugin is re-run every minute."""
    next_refresh = 0.0

    async def token() -> str | None:
        nonlocal next_refresh
        if "exec" in (loader._user or {}):
            now = time.monotonic()
            if now >= next_refresh:
                await loader.load_from_exec_plugin()
                configuration.api_key["BearerToken"] = loader.token
                next_refresh = now + _TOKEN_REFRESH_SECONDS
        value = await configuration.get_api_key_with_prefix("BearerToken")
        return str(value) if value else None

    return token


async def load_config(
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    env: Mapping[str, str] | None = None,
    service_account_dir: Path | None = None,
) -> ConnectionConfig:
    """Resolve the apiserver connection (explicit path, $KUBECONFIG, in-cluster, ~/.kube/config).

    `service_account_dir` replaces the kubelet's mount point (tests, measurements)."""
    env = os.environ if env is None else env
    if kubeconfig:
        return await _from_kubeconfig(kubeconfig, context)
    if env.get("KUBECONFIG"):
        return await _from_kubeconfig(env["KUBECONFIG"], context)
    if env.get(_SERVICE_HOST_ENV):
        return _in_cluster(env, service_account_dir or SERVICE_ACCOUNT_DIR)
    default = _default_kubeconfig()
    if default is not None:
        return await _from_kubeconfig(default, context)
    raise ConfigError(
        "no Kubernetes configuration: set KUBECONFIG (or --kubeconfig), run in a cluster, "
        "or create ~/.kube/config"
    )
