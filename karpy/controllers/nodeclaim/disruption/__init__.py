"""`nodeclaim.disruption`: the cheap per-NodeClaim marking the disruption loop reads
(`Consolidatable`)."""

from __future__ import annotations

from karpy.controllers.nodeclaim.disruption.consolidatable import (
    NAME,
    ConsolidatableController,
    consolidatable_at,
)

__all__ = ["NAME", "ConsolidatableController", "consolidatable_at"]
