"""A moto server over HTTP for the AWS provider's tests.

One `ThreadedMotoServer` per session on 127.0.0.1 and a free port; every test starts from a
reset state (`POST /moto-api/reset`). aioboto3 reaches it like any AWS endpoint (moto's
in-process patching does not intercept aiobotocore), with dummy credentials. Tests that need
to count or fail calls register botocore event hooks through `AWSClients(on_client=...)`.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer

from karpy.cloudprovider.aws.clients import AWSClients

REGION = "us-east-1"


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """The endpoint URL of a moto server shared by the session."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def moto_endpoint(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A freshly reset moto server, with dummy credentials and region in the environment."""
    request = urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    return moto_server


@pytest.fixture
def aws_clients(moto_endpoint: str) -> AWSClients:
    """Clients for us-east-1 on the moto server."""
    return AWSClients(REGION, endpoint_url=moto_endpoint)
