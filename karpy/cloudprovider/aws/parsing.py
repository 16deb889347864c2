"""Parsing large AWS responses in a worker thread, not on the event loop.

aiobotocore parses every response on the loop. Most are small, but the catalogue's are not: a
`DescribeInstanceTypes` page, a `DescribeInstanceTypeOfferings` or `DescribeSpotPriceHistory`
page of a thousand items takes botocore's XML parser hundreds of milliseconds to seconds of CPU,
long enough to delay lease renewals, probes and watches. `OffloadingParserFactory` stands in
for aiobotocore's parser factory: a successful response whose body is at least
`OFFLOAD_BYTES` is parsed by botocore's own (synchronous, pure) parser in karpy's worker
threads; everything else (small bodies, errors, event streams) goes through aiobotocore's
parser as before, so the result is the same dict either way.

A thread alone is not enough for XML: botocore hands the whole body to expat in one C call,
which holds the GIL for its whole length (seconds for moto's one-page catalogue), so the worker
feeds it `FEED_BYTES` at a time and the loop gets the GIL back between pieces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from aiobotocore.parsers import AioResponseParserFactory  # type: ignore[import-untyped]
from botocore.compat import ETree, XMLParseError  # type: ignore[import-untyped]
from botocore.parsers import (  # type: ignore[import-untyped]
    ResponseParserError,
    ResponseParserFactory,
)

from karpy.kube.offload import run_off_loop

__all__ = ["FEED_BYTES", "OFFLOAD_BYTES", "OffloadingParserFactory"]

OFFLOAD_BYTES: Final = 64 * 1024
"""Bodies at least this large are parsed off the loop (a 64 KiB EC2 page parses in ~10 ms;
below that the thread hand-over costs more than it saves)."""

FEED_BYTES: Final = 32 * 1024
"""XML handed to expat per call in a worker thread (a few milliseconds of GIL each)."""


def chunked_xml_parser(encoding: str) -> Callable[[bytes], Any]:
    """botocore's `_parse_xml_string_to_dom`, feeding expat `FEED_BYTES` at a time."""

    def parse(xml_string: bytes) -> Any:
        try:
            parser = ETree.XMLParser(target=ETree.TreeBuilder(), encoding=encoding)
            for start in range(0, len(xml_string), FEED_BYTES):
                parser.feed(xml_string[start : start + FEED_BYTES])
            return parser.close()
        except XMLParseError as exc:
            raise ResponseParserError(f"Unable to parse response ({exc}), invalid XML") from exc

    return parse


class OffloadingParser:
    """One response's parser: aiobotocore's, or botocore's in a worker thread for big bodies."""

    def __init__(self, inner: Any, sync: Any, threshold: int) -> None:
        self._inner = inner
        self._sync = sync
        self._threshold = threshold

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def parse(self, response: dict[str, Any], shape: Any) -> Any:
        if self._offloads(response, shape):
            return await run_off_loop(self._sync.parse, response, shape)
        return await self._inner.parse(response, shape)

    def _offloads(self, response: dict[str, Any], shape: Any) -> bool:
        body = response.get("body")
        return (
            int(response.get("status_code", 0)) < 300
            and isinstance(body, bytes | bytearray)
            and len(body) >= self._threshold
            and shape is not None
            and getattr(shape, "event_stream_name", None) is None
        )


class OffloadingParserFactory(AioResponseParserFactory):  # type: ignore[misc]
    """aiobotocore's parser factory, with big successful responses parsed off the loop."""

    def __init__(self, threshold: int = OFFLOAD_BYTES) -> None:
        super().__init__()
        self.threshold = threshold
        self._sync = ResponseParserFactory()

    def set_parser_defaults(self, **kwargs: Any) -> None:
        super().set_parser_defaults(**kwargs)
        self._sync.set_parser_defaults(**kwargs)

    def create_parser(self, protocol_name: str) -> OffloadingParser:
        sync = self._sync.create_parser(protocol_name)
        if hasattr(sync, "_parse_xml_string_to_dom"):
            sync._parse_xml_string_to_dom = chunked_xml_parser(sync.DEFAULT_ENCODING)
        return OffloadingParser(super().create_parser(protocol_name), sync, self.threshold)
