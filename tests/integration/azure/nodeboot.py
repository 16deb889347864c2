"""A VM's custom data read the way the AKS node reads it: base64-decoded as the Azure agent
hands it to cloud-init (gunzipped if it is gzip), its part type found as cloud-init finds it
(by the first line), and, for the "aksscriptless" script, the variables the image's
provisioning scripts inherit as bash itself sets them (`set -o allexport`, then
`provision_start.sh`). No karpy code is used to read it back."""

from __future__ import annotations

import base64
import gzip
import subprocess
from dataclasses import dataclass

__all__ = ["NodeScript", "read_custom_data"]

_CLOUD_INIT_TYPES = (
    ("#!", "text/x-shellscript"),
    ("#cloud-config", "text/cloud-config"),
    ("#include", "text/x-include-url"),
    ("#cloud-boothook", "text/cloud-boothook"),
    ("Content-Type: multipart/", "multipart/mixed"),
)
START = '/usr/bin/nohup /bin/bash -c "/bin/bash /opt/azure/containers/provision_start.sh"'


@dataclass(frozen=True)
class NodeScript:
    part_type: str
    text: str
    variables: dict[str, str]
    """What the provisioning scripts see: the variables set before `provision_start.sh`."""


def _part_type(text: str) -> str:
    for prefix, kind in _CLOUD_INIT_TYPES:
        if text.startswith(prefix):
            return kind
    return "text/plain"  # cloud-init ignores it


def _bash_variables(block: str) -> dict[str, str]:
    """Source `block` in a clean bash with allexport on, and read back its environment."""
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", "set -o allexport; source /dev/stdin; env -0"],
        input=block,
        capture_output=True,
        text=True,
        env={},
        timeout=30,
        check=True,
    )
    out = {}
    for item in proc.stdout.split("\0"):
        if "=" in item:
            name, _, value = item.partition("=")
            out[name] = value
    for own in ("PWD", "SHLVL", "_", "OLDPWD"):
        out.pop(own, None)
    return out


def read_custom_data(custom_data: str) -> NodeScript:
    raw = base64.b64decode(custom_data, validate=True)
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode()
    kind = _part_type(text)
    if kind != "text/x-shellscript":
        return NodeScript(kind, text, {})
    subprocess.run(["bash", "-n"], input=text, text=True, check=True, timeout=30)
    lines = text.splitlines()
    # The variables come after the wait for the image's provision.sh and before its start.
    done = lines.index("done")
    start = lines.index(START)
    return NodeScript(kind, text, _bash_variables("\n".join(lines[done + 1 : start]) + "\n"))
