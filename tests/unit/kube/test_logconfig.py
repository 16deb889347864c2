"""Logging: JSON lines with Karpenter's keys, stdlib records included (checked in a subprocess,
since configuring logging is process-wide)."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import logging, structlog
from karpy.kube.logconfig import configure_logging
configure_logging("info", json=True)
configure_logging("debug", json=False)  # later calls only change the level
log = structlog.get_logger("karpy.test").bind(controller="nodeclaim.lifecycle")
log.debug("launched nodeclaim", NodeClaim={"name": "default-abc"})
logging.getLogger("aiohttp.client").warning("from the stdlib")
logging.getLogger("botocore.parsers").debug("Response body: b'<DescribeInstanceTypesResponse'")
logging.getLogger("azure.core.pipeline.policies.http_logging_policy").info("Request URL: ...")
logging.getLogger("azure.identity").warning("the SDK's warning")
try:
    raise ValueError("boom")
except ValueError:
    log.exception("reconciler error")
"""


def test_json_lines_with_karpenter_keys() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    lines = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    assert len(lines) == 4, proc.stderr
    first = lines[0]
    assert list(first)[:4] == ["level", "time", "logger", "message"]
    assert first["level"] == "DEBUG" and first["message"] == "launched nodeclaim"
    assert first["controller"] == "nodeclaim.lifecycle"
    assert first["NodeClaim"] == {"name": "default-abc"}
    assert lines[1]["logger"] == "aiohttp.client" and lines[1]["level"] == "WARNING"
    # the SDKs' debug and info records are not karpy's debug: only their warnings show
    assert lines[2]["logger"] == "azure.identity" and lines[2]["level"] == "WARNING"
    assert "ValueError: boom" in lines[3]["exception"]
