"""The Azure provider's settings: upstream's names, its defaults, and start-up errors that name
the missing or bad variable."""

from __future__ import annotations

import pytest

from karpy.settings import SETTINGS, SettingsError, load_settings

SUBNET = (
    "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/"
    "aks-vnet/subnets/aks-subnet"
)
REQUIRED = {
    "PROVIDER": "azure",
    "CLUSTER_NAME": "aks",
    "CLUSTER_ENDPOINT": "https://aks-dns-12345678.hcp.westus2.azmk8s.io:443",
    "KUBELET_BOOTSTRAP_TOKEN": "abcdef.0123456789abcdef",
    "ARM_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000001",
    "LOCATION": "WestUS2",
    "AZURE_NODE_RESOURCE_GROUP": "MC_rg_aks_westus2",
    "VNET_SUBNET_ID": SUBNET,
}
UPSTREAM_NAMES = {
    "CLUSTER_NAME", "CLUSTER_ENDPOINT", "VM_MEMORY_OVERHEAD_PERCENT", "KUBELET_BOOTSTRAP_TOKEN",
    "SSH_PUBLIC_KEY", "NETWORK_PLUGIN", "NETWORK_PLUGIN_MODE", "NETWORK_POLICY",
    "NETWORK_DATAPLANE", "VNET_SUBNET_ID", "VNET_GUID", "NODE_IDENTITIES", "PROVISION_MODE",
    "AZURE_NODE_RESOURCE_GROUP", "ARM_SUBSCRIPTION_ID", "LOCATION", "ARM_RESOURCE_GROUP",
    "KUBELET_IDENTITY_CLIENT_ID", "LINUX_ADMIN_USERNAME", "DNS_SERVICE_IP", "ADDITIONAL_TAGS",
}  # fmt: skip


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for spec in SETTINGS:
        monkeypatch.delenv(spec.env, raising=False)


def test_upstream_names_are_settings_with_flags() -> None:
    assert {spec.env for spec in SETTINGS} >= UPSTREAM_NAMES
    flags = {spec.env: spec.flag for spec in SETTINGS}
    assert flags["AZURE_NODE_RESOURCE_GROUP"] == "--azure-node-resource-group"


def test_defaults_are_upstream_ones_and_values_are_read() -> None:
    s = load_settings(
        {**REQUIRED, "NODE_IDENTITIES": "/id/one, /id/two", "NETWORK_PLUGIN": "kubenet"}
    )
    assert s.provider == "azure"
    assert s.azure.location == "westus2"
    assert s.azure.node_identities == ("/id/one", "/id/two")
    assert (s.azure.network_plugin, s.azure.network_plugin_mode) == ("kubenet", "overlay")
    assert s.azure.network_dataplane == "cilium"
    assert s.azure.provision_mode == "aksscriptless"
    assert s.azure.arm_endpoint == "https://management.azure.com"


def test_environment_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    for env, value in REQUIRED.items():
        monkeypatch.setenv(env, value)
    monkeypatch.setenv("ARM_ENDPOINT", "https://127.0.0.1:8443/")
    s = load_settings()
    assert s.azure.subscription_id == REQUIRED["ARM_SUBSCRIPTION_ID"]
    assert s.azure.arm_endpoint == "https://127.0.0.1:8443"


@pytest.mark.parametrize("missing", sorted(set(REQUIRED) - {"PROVIDER"}))
def test_each_required_setting_is_named_when_missing(missing: str) -> None:
    given = {k: v for k, v in REQUIRED.items() if k != missing}
    with pytest.raises(SettingsError) as err:
        load_settings(given)
    assert f"{missing} required with PROVIDER=azure" in str(err.value)


@pytest.mark.parametrize(
    ("env", "value"),
    [
        ("VNET_SUBNET_ID", "aks-subnet"),
        ("NETWORK_PLUGIN", "flannel"),
        ("ARM_ENDPOINT", "management.azure.com"),
        ("PROVISION_MODE", "bootstrappingclient"),
        ("DNS_SERVICE_IP", "999.1.2.3"),
        ("DNS_SERVICE_IP", "10.0.0.0/16"),
        ("ADDITIONAL_TAGS", "team"),
        ("ADDITIONAL_TAGS", "=web"),
        ("ADDITIONAL_TAGS", "a=b=c"),
    ],
)
def test_bad_values_name_the_setting(env: str, value: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings({**REQUIRED, env: value})
    assert str(err.value).splitlines()[1].strip().startswith(env)


def test_other_providers_need_no_azure_setting() -> None:
    assert load_settings({"PROVIDER": "kwok"}).azure.subscription_id == ""


def test_dns_service_ip_and_additional_tags_read_as_upstream_reads_them() -> None:
    s = load_settings(
        {**REQUIRED, "DNS_SERVICE_IP": " 10.2.0.10 ", "ADDITIONAL_TAGS": " team = web ,,env=, "}
    )
    assert s.azure.dns_service_ip == "10.2.0.10"
    # Blank entries dropped, blanks trimmed, an empty value kept.
    assert s.azure.additional_tags == {"team": "web", "env": ""}
    assert (
        load_settings({**REQUIRED, "DNS_SERVICE_IP": "fd00::a"}).azure.dns_service_ip == "fd00::a"
    )
    unset = load_settings(REQUIRED).azure
    assert (unset.dns_service_ip, unset.additional_tags) == ("", {})
