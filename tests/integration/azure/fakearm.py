"""A small Azure Resource Manager over HTTPS on 127.0.0.1, for the Azure provider's tests.

No Azure emulator can be installed here (moto covers AWS only), so this answers the ARM
operations the provider uses, as the ARM REST reference describes them, to the real async SDK
clients (`azure-mgmt-compute`, `-network`, `-resourcegraph`) pointed at it through `base_url`:

- Resource SKUs: `GET /subscriptions/{s}/providers/Microsoft.Compute/skus` (`$filter=location eq`);
- VMs and NICs: `PUT`/`GET`/`DELETE` on `/subscriptions/{s}/resourceGroups/{rg}/providers/
  Microsoft.Compute/virtualMachines/{name}` and `.../Microsoft.Network/networkInterfaces/{name}`,
  `GET` of the resource group's list. PUT answers 201 and DELETE 202, both with an
  `Azure-AsyncOperation` header; the operation reads `InProgress` for `lro_polls` polls, then
  `Succeeded` (or `Failed` with the injected error), so the SDK's pollers run unmodified;
- Resource Graph: `POST /providers/Microsoft.ResourceGraph/resources` with the small query
  subset the provider writes (`Resources | where type =~ '<type>'` and
  `tags['<key>'] == '<value>'` clauses);
- Retail prices: `GET /api/retail/prices` (`$filter=armRegionName eq '<r>'`), one page;
- Subnets: `GET .../Microsoft.Network/virtualNetworks/{vnet}/subnets/{name}` (seeded in
  `subnets`);
- A managed identity token endpoint (`GET /msi/token`, App Service's protocol: the SDK's
  `ManagedIdentityCredential` reads it from `IDENTITY_ENDPOINT` and `IDENTITY_HEADER`), so a
  `karpy run` process authenticates with `DefaultAzureCredential` unchanged;
- Community gallery image versions: `GET /subscriptions/{s}/providers/Microsoft.Compute/
  locations/{l}/communityGalleries/{gallery}/images/{image}/versions` (seeded in `images`;
  `publish_node_images(version)` publishes a version of every AKS node image definition the
  real community galleries have, `NODE_IMAGES`: Hyper-V generation 2 and 1, amd64 and arm64).

HTTPS, because the SDK's bearer-token policy refuses plain HTTP: a self-signed certificate for
127.0.0.1 made at start (clients pass `connection_verify=False`). Tokens are not checked.

Faults are injected at this seam and counted: `throttle(n)` answers the next n requests 429 with
`Retry-After`; `throttle_for(seconds, kinds)` answers every request of those (method, kind)s 429
until the time is up, as ARM's per-operation throttling does, and counts them in
`throttled_calls`; `fail_vm_create(code, ...)` fails the next VM creations with an ARM error
(`SkuNotAvailable`, `OperationNotAllowed` for quota at once with 409; `AllocationFailed`,
`ZonalAllocationFailed` through the long-running operation, as ARM reports them).
`calls` counts requests by (method, kind).
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import ipaddress
import itertools
import re
import ssl
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

JSON = dict[str, Any]

_RG = r"/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers"
_KINDS = {
    "Microsoft.Compute/virtualMachines": "vm",
    "Microsoft.Network/networkInterfaces": "nic",
}
# An async operation error ARM reports through the operation, not the PUT.
ASYNC_ERRORS = frozenset(
    {"AllocationFailed", "ZonalAllocationFailed", "OverconstrainedAllocationRequest"}
)


UBUNTU_GALLERY = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
AZURE_LINUX_GALLERY = "AKSAzureLinux-f7c7cda5-1c9a-4bdc-a222-9614c968580b"
NODE_IMAGES: dict[str, tuple[str, ...]] = {
    UBUNTU_GALLERY: (
        "2204gen2containerd",
        "2204containerd",
        "2204gen2arm64containerd",
        "2404gen2containerd",
        "2404containerd",
        "2404gen2arm64containerd",
    ),
    # Azure Linux 3 publishes no arm64 definition to the community gallery.
    AZURE_LINUX_GALLERY: ("V2gen2", "V2", "V2gen2arm64", "V3gen2", "V3"),
}
"""The AKS node image definitions of the community galleries, by gallery: per OS release a
Hyper-V generation 2 (`gen2`) and a generation 1 amd64 image, and a generation 2 arm64 one."""


@dataclass
class Fault:
    """One injected VM-create failure."""

    code: str
    message: str
    status: int = 409


@dataclass
class _Operation:
    polls_left: int
    error: Fault | None = None
    on_success: Any = None


@dataclass
class ArmState:
    """Everything the fake holds; tests read and seed it directly."""

    skus: dict[str, list[JSON]] = field(default_factory=dict)
    """Resource SKU records by location."""
    prices: list[JSON] = field(default_factory=list)
    """Retail price items."""
    subnets: set[str] = field(default_factory=set)
    """Lowercased subnet resource ids that exist."""
    images: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """(community gallery, image definition) -> its version names."""
    resources: dict[str, JSON] = field(default_factory=dict)
    """VMs and NICs by lowercased resource id."""
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    lro_polls: int = 1
    retry_after: str = "0"
    """The long-running operations' `Retry-After`: 0 lets clients with `polling_interval=0`
    poll at once; the SDK's pollers read 0 as "none" and wait their own interval (30 s by
    default), so a process using default clients wants "1"."""
    price_page_size: int = 100
    throttled: int = 0
    throttle_until: dict[tuple[str, str], float] = field(default_factory=dict)
    """(method, kind) -> the `time.monotonic()` until which its requests are answered 429."""
    throttle_retry_after: str = "1"
    throttled_calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    """The 429s `throttle_for` answered, by (method, kind)."""
    vm_faults: list[Fault] = field(default_factory=list)
    operations: dict[str, _Operation] = field(default_factory=dict)

    def throttle(self, count: int) -> None:
        self.throttled += count

    def add_skus(self, location: str, records: list[JSON]) -> None:
        """Serve copies of Resource SKU records (captured in another region) in `location`."""
        for record in copy.deepcopy(records):
            record["locations"] = [location]
            for info in record["locationInfo"]:
                info["location"] = location
            self.skus.setdefault(location, []).append(record)

    def publish_node_images(self, version: str) -> None:
        """Publish `version` of every AKS node image definition (`NODE_IMAGES`), as AKS
        publishes a release of the node images to the community galleries."""
        for gallery, definitions in NODE_IMAGES.items():
            for definition in definitions:
                self.images.setdefault((gallery, definition), []).append(version)

    def throttle_for(
        self, seconds: float, kinds: set[tuple[str, str]], *, retry_after: str = "1"
    ) -> None:
        """Answer requests of `kinds` ((method, kind): `("PUT", "vm")`, `("POST", "graph")`)
        429 with `Retry-After: retry_after` for the next `seconds` (each kind's own window:
        calls for other kinds leave it as it is)."""
        until = time.monotonic() + seconds
        for kind in kinds:
            self.throttle_until[kind] = until
        self.throttle_retry_after = retry_after

    def throttling(self, method: str, kind: str) -> bool:
        return time.monotonic() < self.throttle_until.get((method, kind), 0.0)

    def fail_vm_create(self, code: str, message: str = "", *, times: int = 1) -> None:
        status = 200 if code in ASYNC_ERRORS else 409
        for _ in range(times):
            self.vm_faults.append(Fault(code, message or f"injected {code}", status))

    def of_kind(self, kind: str) -> list[JSON]:
        return [r for r in self.resources.values() if _KINDS.get(r["type"]) == kind]


def _self_signed(directory: Path) -> ssl.SSLContext:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-arm")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "arm.crt", directory / "arm.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context


def _kind_of(path: str) -> str:
    """The kind `calls` counts a request under (`vm`, `nic`, `graph`, ...), from its path."""
    if path == "/providers/Microsoft.ResourceGraph/resources":
        return "graph"
    for type_, kind in _KINDS.items():
        if re.fullmatch(_RG + "/" + re.escape(type_) + r"(?:/[^/]+)?", path):
            return kind
    return "other"


def _error(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.json_response(
        {"error": {"code": code, "message": message}}, status=status, headers=headers
    )


class FakeArm:
    """The server; `async with FakeArm() as arm:` serves on `arm.url` until the block ends."""

    def __init__(self) -> None:
        self.state = ArmState()
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._ids = itertools.count(1)
        self._tmp = tempfile.TemporaryDirectory(prefix="fakearm-")

    async def __aenter__(self) -> FakeArm:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner, "127.0.0.1", 0, ssl_context=_self_signed(Path(self._tmp.name))
        )
        self.cert_path = Path(self._tmp.name) / "arm.crt"
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"https://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        self._tmp.cleanup()

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.state.throttled > 0:
            self.state.throttled -= 1
            self.state.calls[(request.method, "throttled")] += 1
            return _error(429, "TooManyRequests", "throttled by the fake", {"Retry-After": "1"})
        kind = _kind_of(unquote(request.path))
        if self.state.throttling(request.method, kind):
            self.state.throttled_calls[(request.method, kind)] += 1
            return _error(
                429,
                "TooManyRequests",
                f"throttled by the fake: {request.method} {kind}",
                {"Retry-After": self.state.throttle_retry_after},
            )
        response: web.StreamResponse = await handler(request)
        return response

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = unquote(request.path)
        if m := re.fullmatch(r"/subscriptions/[^/]+/providers/Microsoft\.Compute/skus", path):
            return self._skus(request)
        if m := re.fullmatch(r"/operations/(?P<id>\d+)", path):
            return self._operation(request, m["id"])
        if path == "/providers/Microsoft.ResourceGraph/resources":
            return await self._graph(request)
        if path == "/api/retail/prices":
            return self._prices(request)
        if path == "/msi/token":
            self.state.calls[("GET", "token")] += 1
            return web.json_response(
                {
                    "access_token": "fake-token",
                    "expires_on": str(int(datetime.datetime.now(datetime.UTC).timestamp()) + 3600),
                    "resource": request.query.get("resource", ""),
                    "token_type": "Bearer",
                }
            )
        if m := re.fullmatch(
            _RG + r"/Microsoft\.Network/virtualNetworks/[^/]+/subnets/(?P<name>[^/]+)", path
        ):
            return self._subnet(path, m["name"])
        if m := re.fullmatch(
            r"/subscriptions/[^/]+/providers/Microsoft\.Compute/locations/(?P<loc>[^/]+)/"
            r"communityGalleries/(?P<gallery>[^/]+)/images/(?P<image>[^/]+)/versions",
            path,
        ):
            return self._image_versions(m["loc"], m["gallery"], m["image"])
        for type_, kind in _KINDS.items():
            if m := re.fullmatch(_RG + "/" + re.escape(type_) + r"(?:/(?P<name>[^/]+))?", path):
                return await self._resource(request, kind, type_, m)
        return _error(404, "NotFound", f"the fake ARM does not serve {request.method} {path}")

    # Resource SKUs -------------------------------------------------------------------------

    def _skus(self, request: web.Request) -> web.Response:
        self.state.calls[("GET", "skus")] += 1
        location = None
        if m := re.search(r"location eq '([^']+)'", request.query.get("$filter", "")):
            location = m[1].lower()
        items = [
            sku
            for loc, skus in self.state.skus.items()
            if location is None or loc.lower() == location
            for sku in skus
        ]
        return web.json_response({"value": items})

    # VMs and NICs --------------------------------------------------------------------------

    async def _resource(
        self, request: web.Request, kind: str, type_: str, m: re.Match[str]
    ) -> web.Response:
        name = m["name"]
        self.state.calls[(request.method, kind)] += 1
        if name is None:
            if request.method != "GET":
                return _error(405, "MethodNotAllowed", request.method)
            prefix = (
                f"/subscriptions/{m['sub']}/resourcegroups/{m['rg']}/providers/{type_}/".lower()
            )
            return web.json_response(
                {"value": [r for key, r in self.state.resources.items() if key.startswith(prefix)]}
            )
        rid = f"/subscriptions/{m['sub']}/resourceGroups/{m['rg']}/providers/{type_}/{name}"
        key = rid.lower()
        existing = self.state.resources.get(key)
        if request.method == "GET":
            if existing is None:
                return _error(
                    404, "ResourceNotFound", f"The Resource '{type_}/{name}' was not found."
                )
            return web.json_response(existing)
        if request.method == "DELETE":
            if existing is None:
                return web.Response(status=204)
            existing["properties"]["provisioningState"] = "Deleting"

            def gone() -> None:
                self.state.resources.pop(key, None)

            return self._accepted(
                request, _Operation(self.state.lro_polls, on_success=gone), status=202
            )
        if request.method == "PUT":
            body: JSON = await request.json()
            fault = None
            if kind == "vm" and existing is None and self.state.vm_faults:
                fault = self.state.vm_faults.pop(0)
                if fault.code not in ASYNC_ERRORS:
                    return _error(fault.status, fault.code, fault.message)
            resource = self._store(rid, kind, type_, name, body, existing)

            def settle() -> None:
                resource["properties"]["provisioningState"] = "Succeeded"

            op = _Operation(self.state.lro_polls, error=fault, on_success=settle)
            if fault is not None:

                def failed() -> None:
                    resource["properties"]["provisioningState"] = "Failed"

                op.on_success = failed
            return self._accepted(request, op, status=200 if existing else 201, body=resource)
        return _error(405, "MethodNotAllowed", request.method)

    def _store(
        self, rid: str, kind: str, type_: str, name: str, body: JSON, existing: JSON | None
    ) -> JSON:
        properties = dict(body.get("properties") or {})
        properties["provisioningState"] = "Updating" if existing else "Creating"
        resource: JSON = {
            "id": rid,
            "name": name,
            "type": type_,
            "location": body.get("location", ""),
            "tags": body.get("tags") or {},
            "properties": properties,
        }
        for extra in ("zones", "identity"):
            if extra in body:
                resource[extra] = body[extra]
        if kind == "vm":
            properties.setdefault("vmId", f"00000000-0000-0000-0000-{next(self._ids):012d}")
        if kind == "nic":
            for index, config in enumerate(properties.get("ipConfigurations") or ()):
                config.setdefault("properties", {})["privateIPAddress"] = (
                    f"10.224.0.{next(self._ids) % 250 + 4}"
                )
                config["properties"].setdefault("primary", index == 0)
        self.state.resources[rid.lower()] = resource
        return resource

    def _accepted(
        self, request: web.Request, op: _Operation, *, status: int, body: JSON | None = None
    ) -> web.Response:
        op_id = str(next(self._ids))
        self.state.operations[op_id] = op
        url = f"{request.scheme}://{request.host}/operations/{op_id}?api-version=2024-01-01"
        headers = {"Azure-AsyncOperation": url, "Retry-After": self.state.retry_after}
        if status == 202:
            headers["Location"] = url
            return web.Response(status=202, headers=headers)
        return web.json_response(body, status=status, headers=headers)

    def _operation(self, request: web.Request, op_id: str) -> web.Response:
        self.state.calls[("GET", "operation")] += 1
        op = self.state.operations.get(op_id)
        if op is None:
            return _error(404, "NotFound", f"no operation {op_id}")
        if op.polls_left > 0:
            op.polls_left -= 1
            return web.json_response(
                {"status": "InProgress"}, headers={"Retry-After": self.state.retry_after}
            )
        if op.on_success is not None:
            op.on_success()
            op.on_success = None
        if op.error is not None:
            return web.json_response(
                {"status": "Failed", "error": {"code": op.error.code, "message": op.error.message}}
            )
        return web.json_response({"status": "Succeeded"})

    # Subnets and node images ---------------------------------------------------------------

    def _subnet(self, path: str, name: str) -> web.Response:
        self.state.calls[("GET", "subnet")] += 1
        if path.lower() not in self.state.subnets:
            return _error(404, "NotFound", f"Resource {path} not found.")
        return web.json_response(
            {
                "id": path,
                "name": name,
                "type": "Microsoft.Network/virtualNetworks/subnets",
                "properties": {"addressPrefix": "10.224.0.0/16", "provisioningState": "Succeeded"},
            }
        )

    def _image_versions(self, location: str, gallery: str, image: str) -> web.Response:
        self.state.calls[("GET", "image-versions")] += 1
        versions = self.state.images.get((gallery, image))
        if versions is None:
            return _error(
                404, "GalleryImageNotFound", f"The gallery image {gallery}/{image} is not found."
            )
        return web.json_response(
            {
                "value": [
                    {
                        "name": version,
                        "location": location,
                        "type": "Microsoft.Compute/locations/communityGalleries/images/versions",
                        "identifier": {
                            "uniqueId": f"/CommunityGalleries/{gallery}/Images/{image}/"
                            f"Versions/{version}"
                        },
                        "properties": {"publishedDate": "2025-01-01T00:00:00Z"},
                    }
                    for version in versions
                ]
            }
        )

    # Resource Graph ------------------------------------------------------------------------

    async def _graph(self, request: web.Request) -> web.Response:
        self.state.calls[("POST", "graph")] += 1
        body: JSON = await request.json()
        query = str(body.get("query", ""))
        rows = list(self.state.resources.values())
        if m := re.search(r"type\s*=~\s*'([^']+)'", query):
            rows = [r for r in rows if r["type"].lower() == m[1].lower()]
        for tag, value in re.findall(
            r"tags\[['\"]([^'\"]+)['\"]\]\s*==\s*['\"]([^'\"]*)['\"]", query
        ):
            rows = [r for r in rows if r["tags"].get(tag) == value]
        data = [dict(r, type=r["type"].lower()) for r in rows]
        return web.json_response(
            {
                "totalRecords": len(data),
                "count": len(data),
                "resultTruncated": "false",
                "data": data,
            }
        )

    # Retail prices -------------------------------------------------------------------------

    def _prices(self, request: web.Request) -> web.Response:
        """One page of `price_page_size` items; the next page's link carries `$skip`, as the
        Retail Prices API's does."""
        self.state.calls[("GET", "prices")] += 1
        query = request.query.get("$filter", "")
        items = self.state.prices
        if m := re.search(r"armRegionName eq '([^']+)'", query):
            items = [i for i in items if i.get("armRegionName") == m[1]]
        skip = int(request.query.get("$skip", "0"))
        page = items[skip : skip + self.state.price_page_size]
        following = None
        if skip + len(page) < len(items):
            following = str(
                request.url.with_query({"$filter": query, "$skip": str(skip + len(page))})
            )
        return web.json_response(
            {"BillingCurrency": "USD", "Items": page, "NextPageLink": following, "Count": len(page)}
        )


class ThreadedFakeArm:
    """A `FakeArm` on its own event loop in a thread, for tests that run `karpy run` as a
    process: `with ThreadedFakeArm() as arm:`; `arm.url`, `arm.cert_path`, `arm.state`."""

    def __init__(self) -> None:
        self.arm = FakeArm()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fakearm", daemon=True)

    @property
    def url(self) -> str:
        return self.arm.url

    @property
    def cert_path(self) -> Path:
        return self.arm.cert_path

    @property
    def state(self) -> ArmState:
        return self.arm.state

    def __enter__(self) -> ThreadedFakeArm:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.arm.__aenter__(), self._loop).result(timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.arm.__aexit__(), self._loop).result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
