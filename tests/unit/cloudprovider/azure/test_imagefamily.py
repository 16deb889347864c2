"""Which OS release an image family means at a Kubernetes version, at and around the upstream
Azure provider's boundaries (Ubuntu 24.04 from 1.34, Azure Linux 3 from 1.32)."""

from __future__ import annotations

import pytest

from karpy.cloudprovider.azure.imagefamily import (
    image_definitions,
    variant,
    version_at_least,
    windows_unsupported,
)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.34.0", True),
        ("v1.34.0", True),
        ("1.34", True),
        ("v1.34.2+aks.1", True),
        ("1.35.0-rc.0", True),
        ("2.0.0", True),
        ("1.33.12", False),
        ("1.34.0-rc.1", False),
        ("v1.34.0-alpha.3+abc", False),
        ("", False),
        ("latest", False),
    ],
)
def test_version_at_least_orders_as_semver(version: str, expected: bool) -> None:
    assert version_at_least(version, (1, 34)) is expected


@pytest.mark.parametrize(
    ("family", "version", "expected"),
    [
        ("", "1.33.9", "Ubuntu2204"),
        ("Ubuntu", "1.33.9", "Ubuntu2204"),
        ("Ubuntu", "1.34.0", "Ubuntu2404"),
        ("Ubuntu2204", "1.37.2", "Ubuntu2204"),
        ("Ubuntu2404", "1.30.0", "Ubuntu2404"),
        ("AzureLinux", "1.31.12", "AzureLinux2"),
        ("AzureLinux", "1.32.0", "AzureLinux3"),
        ("AzureLinux", "garbage", "AzureLinux2"),
        ("Windows2022", "1.33.0", None),
        ("Windows2025", "1.34.0", None),
    ],
)
def test_variant(family: str, version: str, expected: str | None) -> None:
    assert variant(family, version) == expected


def test_azure_linux_3_has_no_arm64_image_in_the_community_gallery() -> None:
    assert {d.arch for d in image_definitions("AzureLinux", "1.32.0")} == {"amd64"}
    assert {d.arch for d in image_definitions("AzureLinux", "1.31.0")} == {"amd64", "arm64"}
    assert image_definitions("Windows2022", "1.33.0") == ()


def test_the_windows_message_says_why_and_what_instead() -> None:
    message = windows_unsupported("Windows2022")
    assert "aksscriptless" in message and "PROVISION_MODE=aksmachineapi" in message
    assert "Ubuntu, Ubuntu2204, Ubuntu2404 or AzureLinux" in message
