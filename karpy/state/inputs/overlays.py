"""NodeOverlays as the engine's inputs see them: each NodePool template's instance types with
the overlays' prices and capacities (`karpy.scheduling.overlays` decides what applies)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.scheduling.overlays import Overlay, OverlayResult, Pool, apply_overlays

__all__ = ["OverlaidTemplates", "overlay_templates"]


@dataclass(frozen=True)
class OverlaidTemplates:
    templates: list[NodePoolTemplate]
    result: OverlayResult
    """Which overlays applied (and to which NodePools), and which conflicted."""

    @property
    def applied(self) -> dict[str, list[str]]:
        return self.result.applied

    @property
    def conflicts(self) -> dict[str, str]:
        return self.result.conflicts


def overlay_templates(
    templates: Sequence[NodePoolTemplate], overlays: Sequence[Overlay]
) -> OverlaidTemplates:
    """The templates with their instance types adjusted; an untouched template is returned as
    it is."""
    result = apply_overlays([Pool(t.name, t.labels, t.instance_types) for t in templates], overlays)
    out = []
    for t in templates:
        types = result.types.get(t.name, list(t.instance_types))
        same = all(a is b for a, b in zip(types, t.instance_types, strict=True))
        out.append(t if same else dataclasses.replace(t, instance_types=types))
    return OverlaidTemplates(out, result)
