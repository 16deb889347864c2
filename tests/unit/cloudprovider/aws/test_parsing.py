"""Big responses are parsed in a worker thread, to the same dict aiobotocore's parser makes on the
loop; small ones and errors stay with aiobotocore."""

from __future__ import annotations

import threading
from typing import Any

import botocore.session
import pytest
from aiobotocore.parsers import AioResponseParserFactory

from karpy.cloudprovider.aws import parsing
from karpy.cloudprovider.aws.parsing import FEED_BYTES, OFFLOAD_BYTES, OffloadingParserFactory

NS = "http://ec2.amazonaws.com/doc/2016-11-15/"


def operation(name: str) -> Any:
    return botocore.session.get_session().get_service_model("ec2").operation_model(name)


def describe_instance_types_body(count: int) -> bytes:
    items = "".join(
        f"<item><instanceType>m{i}.large</instanceType><currentGeneration>true</currentGeneration>"
        f"<vCpuInfo><defaultVCpus>{i % 96 + 1}</defaultVCpus></vCpuInfo>"
        f"<memoryInfo><sizeInMiB>{1024 * (i + 1)}</sizeInMiB></memoryInfo>"
        "<processorInfo><supportedArchitectures><item>x86_64</item></supportedArchitectures>"
        "</processorInfo></item>"
        for i in range(count)
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><DescribeInstanceTypesResponse xmlns="{NS}">'
        f"<requestId>r-1</requestId><instanceTypeSet>{items}</instanceTypeSet>"
        "</DescribeInstanceTypesResponse>"
    ).encode()


def response(body: bytes, status: int = 200) -> dict[str, Any]:
    return {"status_code": status, "headers": {"x-amzn-requestid": "r-1"}, "body": body}


@pytest.fixture
def parse_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads `run_off_loop` parsed in."""
    seen: list[str] = []
    original = parsing.run_off_loop

    async def recording(fn: Any, *args: Any) -> Any:
        def run() -> Any:
            seen.append(threading.current_thread().name)
            return fn(*args)

        return await original(run)

    monkeypatch.setattr(parsing, "run_off_loop", recording)
    return seen


async def test_a_big_page_is_parsed_off_the_loop_to_the_same_result(
    parse_threads: list[str],
) -> None:
    body = describe_instance_types_body(1500)
    assert len(body) > max(OFFLOAD_BYTES, 4 * FEED_BYTES)
    shape = operation("DescribeInstanceTypes").output_shape
    expected = await AioResponseParserFactory().create_parser("ec2").parse(response(body), shape)
    parsed = await OffloadingParserFactory().create_parser("ec2").parse(response(body), shape)
    assert parsed == expected
    assert len(parsed["InstanceTypes"]) == 1500
    assert parsed["InstanceTypes"][7]["MemoryInfo"]["SizeInMiB"] == 8192
    assert len(parse_threads) == 1 and parse_threads[0].startswith("karpy-offload")


async def test_small_pages_and_errors_stay_on_the_loop(parse_threads: list[str]) -> None:
    shape = operation("DescribeInstanceTypes").output_shape
    factory = OffloadingParserFactory()
    small = await factory.create_parser("ec2").parse(
        response(describe_instance_types_body(3)), shape
    )
    assert [t["InstanceType"] for t in small["InstanceTypes"]] == [
        "m0.large",
        "m1.large",
        "m2.large",
    ]
    error_body = (
        b'<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error>'
        b"<Code>InsufficientInstanceCapacity</Code><Message>none left</Message>"
        + b" " * OFFLOAD_BYTES
        + b"</Error></Errors><RequestID>r-2</RequestID></Response>"
    )
    error = await factory.create_parser("ec2").parse(response(error_body, 500), shape)
    assert error["Error"]["Code"] == "InsufficientInstanceCapacity"
    assert parse_threads == []


async def test_truncated_xml_is_a_parser_error() -> None:
    body = describe_instance_types_body(1500)[:-200]
    shape = operation("DescribeInstanceTypes").output_shape
    with pytest.raises(parsing.ResponseParserError, match="invalid XML"):
        await OffloadingParserFactory().create_parser("ec2").parse(response(body), shape)
