"""KWOKNodeClass drift: the instance (its Node) carries the hash of the KWOKNodeClass spec it was
launched with; a different hash now means the node would not be launched like this again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["ANNOTATION_NODECLASS_HASH", "nodeclass_hash"]

ANNOTATION_NODECLASS_HASH: Final = "karpenter.kwok.sh/kwoknodeclass-hash"


def nodeclass_hash(nodeclass: Mapping[str, Any] | None) -> str:
    """A stable hash of the KWOKNodeClass's spec (key order and absent-vs-null do not count)."""
    spec = {k: v for k, v in ((nodeclass or {}).get("spec") or {}).items() if v is not None}
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
