"""Which instance-type catalogue a simulation plans with: the one the scenario's NodeClasses
call for.

A NodePool that references an EC2NodeClass (or an EC2NodeClass in the scenario) is planned on
EC2 types: the shipped snapshot by default, `--instance-types aws:REGION` for another region,
or an AWS catalogue file (`karpy catalog export --provider aws`). KWOKNodeClass means the kwok
catalogue, built in or from a file. AKSNodeClass means Azure SKUs: the shipped Azure snapshot
(`eastus` by default, `--instance-types azure:REGION` for another shipped region), or an Azure
catalogue file (`karpy catalog export --provider azure`). A scenario
without any uses what `--instance-types` names (the kwok catalogue by default). A catalogue that
does not match the NodeClasses, or a scenario that mixes providers, is a `CatalogError` that
says which flag to use: planning an AWS NodePool on kwok types would print a plan no cluster
could launch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from karpy.cloudprovider.kwok.catalog import kwok_instance_types, load_kwok_catalog
from karpy.scheduling import CatalogError
from karpy.scheduling.instancetypes import InstanceType

__all__ = [
    "AWS_KIND",
    "AZURE_KIND",
    "KWOK_KIND",
    "AKSSizes",
    "NodeClassKinds",
    "choose_catalog",
    "load_catalog",
    "sized_for_nodepool",
]

AWS_KIND = "EC2NodeClass"
KWOK_KIND = "KWOKNodeClass"
AZURE_KIND = "AKSNodeClass"

NodeClassKinds = Mapping[str, str]
"""NodeClass kind -> where the scenario first names it (for messages)."""
AKSSizes = Mapping[str, tuple[int | None, int]]
"""AKSNodeClass name -> its (`maxPods` or None, `osDiskSizeGB`)."""

AWS_FLAG = "--instance-types aws[:REGION] (or an AWS catalogue from `karpy catalog export "
AWS_FLAG += "--provider aws`)"
KWOK_FLAG = "no --instance-types (the built-in kwok catalogue) or a kwok catalogue file"
AZURE_FLAG = "--instance-types azure[:REGION] (or none, for the shipped Azure snapshot, or an "
AZURE_FLAG += "Azure catalogue from `karpy catalog export --provider azure`)"


def _is_azure_name(value: str) -> bool:
    return value == "azure" or value.startswith("azure:") or _is_azure_file(value)


def _is_azure_file(value: str) -> bool:
    if not _may_be_aws_file(value):  # the same first look: entries with `labels`
        return False
    from karpy.cloudprovider.azure.catalogfile import is_azure_catalog_file

    return is_azure_catalog_file(value)


def _azure(value: str | None) -> list[InstanceType]:
    """The shipped Azure snapshot of the region `azure[:REGION]` names (eastus by default), or
    the Azure catalogue file `value` names."""
    from karpy.cloudprovider.azure.snapshot import load_snapshot, parse_instance_types_argument

    region = parse_instance_types_argument(value or "azure")
    if region is None and value:
        from karpy.cloudprovider.azure.catalogfile import load_azure_catalog_file

        return load_azure_catalog_file(value)
    return load_snapshot(region or "eastus")


def _choose_azure(value: str | None, kinds: NodeClassKinds) -> list[InstanceType] | None:
    """Azure SKUs when the scenario uses an AKSNodeClass or `--instance-types` names Azure's;
    None when Azure is not involved."""
    azure_at = kinds.get(AZURE_KIND)
    named = bool(value) and _is_azure_name(value or "")
    if not azure_at and not named:
        return None
    others = [(k, kinds[k]) for k in (AWS_KIND, KWOK_KIND) if kinds.get(k)]
    if azure_at and others:
        kind, at = others[0]
        raise CatalogError(
            f"the scenario mixes {AZURE_KIND} ({azure_at}) and {kind} ({at}): a simulation "
            f"plans for one provider; simulate them in separate runs"
        )
    if azure_at and value and not named:
        raise CatalogError(
            f"--instance-types {value}: not Azure's, but {azure_at} uses an {AZURE_KIND}: "
            f"give {AZURE_FLAG}"
        )
    if not azure_at and others:
        kind, at = others[0]
        raise CatalogError(
            f"--instance-types {value}: Azure SKUs, but {at} uses a {kind}: plan it on "
            f"{AWS_FLAG if kind == AWS_KIND else KWOK_FLAG}"
        )
    return _azure(value)


def _is_aws_name(value: str) -> bool:
    return value == "aws" or value.startswith("aws:")


def _may_be_aws_file(path: str) -> bool:
    """A cheap first look (gzipped, or entries with `labels`) before the AWS reader's exact one."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return False  # the kwok reader says what is wrong with it
    return data[:2] == b"\x1f\x8b" or b'"labels"' in data


def _is_aws_file(path: str) -> bool:
    if not _may_be_aws_file(path):
        return False
    # the AWS models cost a quarter of a second to import: only for an AWS-looking file
    from karpy.cloudprovider.aws.snapshot import is_snapshot_file

    return is_snapshot_file(path)


def _read(value: str | None, *, aws: bool) -> list[InstanceType]:
    """The catalogue `value` names, AWS's (`aws`: the snapshot when `value` is None) or kwok's."""
    if not aws:
        return kwok_instance_types() if not value else load_kwok_catalog(value)
    from karpy.cloudprovider.aws.snapshot import (
        load_snapshot,
        load_snapshot_file,
        parse_instance_types_argument,
    )

    region = parse_instance_types_argument(value or "aws")
    return load_snapshot(region) if region is not None else load_snapshot_file(value or "")


def load_catalog(value: str | None, *, aws: bool) -> list[InstanceType]:
    """`_read`, with errors that name the catalogue file."""
    try:
        return _read(value, aws=aws)
    except CatalogError:
        raise
    except OSError as err:
        raise CatalogError(f"--instance-types {value}: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise CatalogError(f"{value}: not UTF-8 text: byte {err.start}") from None
    except (TypeError, AttributeError, KeyError, ValueError, RecursionError) as err:
        raise CatalogError(f"{value}: not a catalogue: {type(err).__name__}: {err}") from None


def choose_catalog(value: str | None, kinds: NodeClassKinds) -> list[InstanceType]:
    """The catalogue for a scenario whose NodeClasses are `kinds`, given `--instance-types`."""
    azure = _choose_azure(value, kinds)
    if azure is not None:
        return azure
    aws_at, kwok_at = kinds.get(AWS_KIND), kinds.get(KWOK_KIND)
    if aws_at and kwok_at:
        raise CatalogError(
            f"the scenario mixes {AWS_KIND} ({aws_at}) and {KWOK_KIND} ({kwok_at}): a simulation "
            f"plans for one provider; simulate the {AWS_KIND} NodePools with {AWS_FLAG} and the "
            f"{KWOK_KIND} ones with {KWOK_FLAG}, in separate runs"
        )
    given_aws = bool(value) and (_is_aws_name(value or "") or _is_aws_file(value or ""))
    if aws_at:
        if value and not given_aws:
            raise CatalogError(
                f"--instance-types {value}: not an AWS catalogue, but {aws_at} uses an {AWS_KIND}: "
                f"give {AWS_FLAG}, or leave --instance-types out for the shipped EC2 snapshot"
            )
        return load_catalog(value, aws=True)
    if kwok_at and given_aws:
        raise CatalogError(
            f"--instance-types {value}: an AWS catalogue, but {kwok_at} uses a {KWOK_KIND}: "
            f"give {KWOK_FLAG}"
        )
    return load_catalog(value, aws=given_aws)


def sized_for_nodepool(
    types: Sequence[InstanceType],
    nodeclass: tuple[str, str, str] | None,
    sizes: AKSSizes,
    cache: dict[tuple[int | None, int], Sequence[InstanceType]],
) -> Sequence[InstanceType]:
    """The instance types a NodePool whose nodeClassRef is `nodeclass` (group, kind, name)
    plans on: sized by its AKSNodeClass (`maxPods`, `osDiskSizeGB`) when it is known, as the
    Azure provider sizes nodes, else the catalogue's. `cache` keeps one copy per sizing."""
    if nodeclass is None or nodeclass[1] != AZURE_KIND or nodeclass[2] not in sizes:
        return types
    key = sizes[nodeclass[2]]
    if key not in cache:
        from karpy.cloudprovider.azure.snapshot import sized_for_nodeclass

        cache[key] = sized_for_nodeclass(types, max_pods=key[0], os_disk_size_gb=key[1])
    return cache[key]
