"""structlog set up once per process: JSON lines in a cluster, readable text on a terminal.

JSON keys follow Karpenter's: `level`, `time`, `logger`, `message`, then bound context such as
`controller`, `NodeClaim`, `Node`, `Pod` and `reconcileID`. Records from libraries using the
standard `logging` module (aiohttp, kubernetes_asyncio) go through the same renderer.

`LOG_LEVEL` is karpy's level, as Karpenter's is its own: the cloud SDKs and HTTP clients in
`QUIET_LIBRARIES` log their warnings and errors only. At debug, botocore alone wrote every
request and the whole response body (8 MB for one EC2 launch: the instance-type catalogue), and
at info the Azure SDK wrote every ARM request with its headers.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

__all__ = ["LOG_LEVELS", "QUIET_LIBRARIES", "configure_logging"]

LOG_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

QUIET_LIBRARIES = (
    "aiohttp.access",
    "aiobotocore",
    "aioboto3",
    "botocore",
    "boto3",
    "urllib3",
    "azure",
    "msal",
)
"""Loggers kept at WARNING whatever `LOG_LEVEL` says (their children included)."""

_configured = False


def _upper_level(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    level = event.get("level")
    if isinstance(level, str):
        event["level"] = level.upper()
    return event


_FIRST = ("level", "time", "logger", "message")


def _key_order(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    ordered = {k: event.pop(k) for k in _FIRST if k in event}
    ordered.update(event)
    return ordered


def configure_logging(
    level: str = "info", *, json: bool | None = None, stream: TextIO | None = None
) -> None:
    """Configure structlog and the stdlib root logger; later calls only change the level."""
    global _configured
    try:
        numeric = LOG_LEVELS[level.lower()]
    except KeyError:
        raise ValueError(
            f"unknown log level {level!r}; use one of {', '.join(sorted(LOG_LEVELS))}"
        ) from None
    root = logging.getLogger()
    root.setLevel(numeric)
    if _configured:
        return
    _configured = True
    out = stream or sys.stderr
    as_json = (not out.isatty()) if json is None else json
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="time"),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: list[Processor]
    if as_json:
        renderer = [
            _upper_level,
            structlog.processors.format_exc_info,
            structlog.processors.EventRenamer("message"),
            _key_order,
            structlog.processors.JSONRenderer(default=str),
        ]
    else:
        renderer = [structlog.dev.ConsoleRenderer(colors=out.isatty())]
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderer],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root.handlers = [handler]
    for noisy in QUIET_LIBRARIES:
        logging.getLogger(noisy).setLevel(logging.WARNING)
