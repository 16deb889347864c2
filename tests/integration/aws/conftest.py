"""A moto server over HTTP for the AWS provider's tests.

One `ThreadedMotoServer` per session on 127.0.0.1 and a free port; every test starts from a
reset state (`POST /moto-api/reset`). aioboto3 reaches it like any AWS endpoint (moto's
in-process patching does not intercept aiobotocore), with dummy credentials. Tests that need
to count or fail calls register botocore event hooks through `AWSClients(on_client=...)`.
"""

from __future__ import annotations

import copy
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse  # type: ignore[import-untyped]
from botocore.validate import validate_parameters  # type: ignore[import-untyped]
from moto.server import ThreadedMotoServer

from karpy.cloudprovider.aws.clients import AWSClients

REGION = "us-east-1"


@pytest.fixture(scope="session")
def aws_credentials() -> Iterator[None]:
    """Dummy credentials and region, and no user AWS config, for the whole session."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        }.items():
            mp.setenv(name, value)
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2"):
            mp.delenv(name, raising=False)
        yield


@pytest.fixture(scope="session")
def moto_server(aws_credentials: None) -> Iterator[str]:
    """The endpoint URL of a moto server shared by the session (its recorded EC2 data is
    read-only, so fixtures that only describe instance types may share it without a reset)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def moto_endpoint(moto_server: str) -> str:
    """The moto server, reset to its initial state."""
    request = urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    return moto_server


@pytest.fixture
def aws_clients(moto_endpoint: str) -> AWSClients:
    """Clients for us-east-1 on the moto server."""
    return AWSClients(REGION, endpoint_url=moto_endpoint)


class AnsweredError(Exception):
    """Raised by an answer in `CallCounter.answers`: the call fails with this AWS error."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.status = code, message, status


Answer = Callable[[dict[str, Any]], dict[str, Any]]


class CallCounter:
    """Counts API calls by `service.Operation` through botocore's `before-call` events; pass
    `counter.hook` as `AWSClients(on_client=...)`.

    `answers` is the seam for the calls moto does not implement (DescribeCapacityReservations,
    DescribePlacementGroups): an entry `"ec2.DescribePlacementGroups": fn` answers that call
    with `fn(api_params)` instead of sending it, as `botocore.stub.Stubber` does, while every
    other call of the client still reaches the moto server. Each answer is checked against the
    operation's output shape in botocore's model, so it is shaped as the API reference says;
    an answer raising `AnsweredError` fails the call with that error code."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.clients: Counter[str] = Counter()
        self.answers: dict[str, Answer] = {}

    def hook(self, service: str, client: Any) -> None:
        self.clients[service] += 1

        def remember(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
            context["karpy-test-params"] = copy.deepcopy(params)

        def count(model: Any, context: dict[str, Any], **_: Any) -> Any:
            name = f"{service}.{model.name}"
            self.calls[name] += 1
            answer = self.answers.get(name)
            if answer is None:
                return None
            try:
                parsed = answer(context.get("karpy-test-params") or {})
            except AnsweredError as error:
                failed = {
                    "ResponseMetadata": {"HTTPStatusCode": error.status},
                    "Error": {"Code": error.code, "Message": error.message},
                }
                return AWSResponse(None, error.status, {}, None), failed
            validate_parameters(parsed, model.output_shape)
            return AWSResponse(None, 200, {}, None), parsed

        client.meta.events.register(f"before-parameter-build.{service}", remember)
        client.meta.events.register(f"before-call.{service}", count)


@pytest.fixture
def call_counter() -> CallCounter:
    return CallCounter()
