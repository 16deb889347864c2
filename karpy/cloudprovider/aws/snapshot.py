"""Offline snapshots of real EC2 instance types, for `karpy simulate --instance-types aws`.

A snapshot is a catalogue file (the kwok `instance_types.json` format that `--instance-types`
reads) written by `hack/aws/snapshot_instance_types.py` from the EC2 API (or any endpoint that
serves it, such as a moto server) and the shipped on-demand prices, then gzipped. Each entry's
`resources` is the type's capacity under default settings (AL2023, no kubelet overrides) and its
offerings are the zones that sell it, on-demand and spot. Spot prices are not recorded, so spot
offerings carry the on-demand price (the provider's fallback when a spot price is unknown).
Entries add one key the kwok reader ignores, `labels`: the type's single-valued
`karpenter.k8s.aws/*` labels; the others read as `DoesNotExist`, as on a live provider.
`data/snapshots.json` records where and when each region's snapshot was taken.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final

from karpy.apis.aws.v1.labels import LABEL_TOPOLOGY_ZONE_ID
from karpy.apis.v1.labels import LABEL_ARCH, LABEL_OS, LABEL_TOPOLOGY_REGION
from karpy.cloudprovider.aws.capacity import eviction_threshold, kube_reserved
from karpy.cloudprovider.aws.labels import OPTIONAL_LABELS
from karpy.scheduling.catalog import CatalogError, dump_catalog, parse_catalog
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.requirements import Requirement
from karpy.scheduling.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, ResourceMap

__all__ = [
    "DEFAULT_SNAPSHOT_REGION",
    "dump_snapshot",
    "is_snapshot_file",
    "load_snapshot",
    "parse_instance_types_argument",
    "snapshot_regions",
]

DEFAULT_SNAPSHOT_REGION: Final = "us-east-1"
_DATA: Final = "data"
_INDEX: Final = "snapshots.json"
# Labels the catalogue format already carries (or InstanceType derives from offerings).
_CARRIED: Final = frozenset({LABEL_ARCH, LABEL_OS})


def _data() -> Traversable:
    return resources.files("karpy.cloudprovider.aws").joinpath(_DATA)


def snapshot_file_name(region: str) -> str:
    return f"instance-types-{region}.json.gz"


@cache
def snapshot_index() -> Mapping[str, Mapping[str, str]]:
    """Region -> {source, generatedAt, prices} of every shipped snapshot."""
    return json.loads(_data().joinpath(_INDEX).read_text())  # type: ignore[no-any-return]


def snapshot_regions() -> list[str]:
    return sorted(snapshot_index())


def parse_instance_types_argument(value: str) -> str | None:
    """The region named by `aws` / `aws:REGION`, or None when `value` is a file path."""
    if value == "aws":
        return DEFAULT_SNAPSHOT_REGION
    if value.startswith("aws:"):
        return value.removeprefix("aws:")
    return None


def load_snapshot(region: str = DEFAULT_SNAPSHOT_REGION) -> list[InstanceType]:
    """The shipped snapshot of `region` as instance types; `CatalogError` names the regions
    that have one when `region` does not."""
    if region not in snapshot_index():
        raise CatalogError(
            f"--instance-types aws:{region}: no snapshot for region {region!r}; "
            f"shipped: {', '.join(snapshot_regions())}"
        )
    raw = json.loads(gzip.decompress(_data().joinpath(snapshot_file_name(region)).read_bytes()))
    return parse_snapshot(raw, source=f"aws:{region}", region=region)


def load_snapshot_file(path: str | Path, *, region: str | None = None) -> list[InstanceType]:
    """A snapshot written by the hack script, gzipped or not."""
    data = Path(path).read_bytes()
    raw = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return parse_snapshot(raw, source=str(path), region=region)


def is_snapshot_file(path: str | Path) -> bool:
    """Whether a catalogue file is an AWS one (a snapshot or `karpy catalog export --provider
    aws`): its entries carry their `labels`. An unreadable file is not (the kwok reader then
    says what is wrong with it)."""
    try:
        data = Path(path).read_bytes()
        raw = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    except (OSError, ValueError):
        return False
    return isinstance(raw, list) and any(isinstance(e, Mapping) and "labels" in e for e in raw)


def parse_snapshot(raw: Any, *, source: str, region: str | None = None) -> list[InstanceType]:
    """Catalogue entries with their AWS labels and each type's kubelet overhead."""
    labels_by_name: dict[str, Mapping[str, str]] = {}
    for entry in raw if isinstance(raw, list) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            labels = entry.get("labels")
            labels_by_name[entry["name"]] = labels if isinstance(labels, Mapping) else {}

    def labels_for(name: str, capacity: ResourceMap) -> Sequence[Requirement]:
        values = labels_by_name.get(name, {})
        out = [
            Requirement(str(key), complement=False, values=(str(text),))
            for key, text in values.items()
            if key not in _CARRIED
        ]
        out.extend(
            Requirement(key, complement=False, values=())
            for key in OPTIONAL_LABELS
            if key not in values
        )
        if region and LABEL_TOPOLOGY_REGION not in values:
            out.append(Requirement(LABEL_TOPOLOGY_REGION, complement=False, values=(region,)))
        return out

    types = parse_catalog(raw, source=source, labels=labels_for)
    return [
        InstanceType(
            name=t.name,
            capacity=t.capacity,
            offerings=t.offerings,
            requirements=t.requirements.add(*_zone_ids(t)),
            overhead=snapshot_overhead(t.capacity),
        )
        for t in types
    ]


def _zone_ids(t: InstanceType) -> list[Requirement]:
    """`topology.k8s.aws/zone-id` over the type's offerings, as the live provider sets it."""
    ids: set[str] = set()
    for o in t.offerings:
        r = o.requirements.get(LABEL_TOPOLOGY_ZONE_ID)
        if r is not None and not r.complement:
            ids |= r.values
    return (
        [Requirement(LABEL_TOPOLOGY_ZONE_ID, complement=False, values=sorted(ids))] if ids else []
    )


def snapshot_overhead(capacity: Mapping[str, int]) -> ResourceMap:
    """kube-reserved + eviction threshold of a snapshot entry. Snapshots are taken with the
    default settings, where the ENI pod count that sizes kube-reserved memory is the capacity's
    pod count."""
    reserved = kube_reserved(capacity.get(CPU, 0), capacity.get(PODS, 0))
    eviction = eviction_threshold(capacity.get(MEMORY, 0), capacity.get(EPHEMERAL_STORAGE, 0))
    out = dict(reserved)
    for name, amount in eviction.items():
        out[name] = out.get(name, 0) + amount
    return out


def dump_snapshot(
    types: Iterable[InstanceType], labels: Mapping[str, Mapping[str, str]]
) -> list[dict[str, Any]]:
    """Catalogue entries for a snapshot: available offerings only, plus each type's labels."""
    kept: list[InstanceType] = []
    for t in types:
        offerings = [o for o in t.offerings if o.available]
        if offerings:
            kept.append(
                InstanceType(
                    name=t.name,
                    capacity=t.capacity,
                    offerings=offerings,
                    requirements=t.requirements,
                    overhead=t.overhead,
                )
            )
    entries = dump_catalog(kept)
    for entry in entries:
        entry["labels"] = dict(sorted(labels.get(entry["name"], {}).items()))
    return entries
