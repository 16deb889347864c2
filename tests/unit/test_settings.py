"""Settings: Karpenter's env names and defaults, flags over env, errors that name the variable."""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path

import pytest

from karpy import operator
from karpy.apis.duration import format_duration, parse_duration
from karpy.settings import (
    SETTINGS,
    FeatureGates,
    SettingsError,
    load_settings,
)

DESIGN_SETTINGS = {
    "PROVIDER", "CLUSTER_NAME", "CLUSTER_ENDPOINT", "CLUSTER_CA_BUNDLE", "INTERRUPTION_QUEUE",
    "BATCH_IDLE_DURATION",
    "BATCH_MAX_DURATION", "FEATURE_GATES", "VM_MEMORY_OVERHEAD_PERCENT", "RESERVED_ENIS",
    "ISOLATED_VPC", "KUBE_CLIENT_QPS", "KUBE_CLIENT_BURST", "LOG_LEVEL", "METRICS_PORT",
    "HEALTH_PROBE_PORT", "BIND_ADDRESS", "SYSTEM_NAMESPACE", "POD_NAME",
    "DISABLE_LEADER_ELECTION", "PREFERENCE_POLICY", "MIN_VALUES_POLICY", "LAUNCH_TIMEOUT",
    "REGISTRATION_TIMEOUT", "INSTANCE_TYPES_FILE_PATH", "KUBECONFIG",
    "DEFAULT_TOPOLOGY_SPREAD_CONSTRAINTS", "DISRUPTION_COMMAND_TIMEOUT",
}  # fmt: skip
# The Azure provider's, named as upstream's (tests/unit/cloudprovider/azure/test_settings.py).
AZURE_SETTINGS = {
    "ARM_SUBSCRIPTION_ID", "LOCATION", "ARM_RESOURCE_GROUP", "AZURE_NODE_RESOURCE_GROUP",
    "VNET_SUBNET_ID", "VNET_GUID", "NETWORK_PLUGIN", "NETWORK_PLUGIN_MODE", "NETWORK_POLICY",
    "NETWORK_DATAPLANE", "KUBELET_BOOTSTRAP_TOKEN", "SSH_PUBLIC_KEY", "NODE_IDENTITIES",
    "PROVISION_MODE", "ARM_ENDPOINT", "AZURE_PRICES_ENDPOINT", "KUBELET_IDENTITY_CLIENT_ID",
    "LINUX_ADMIN_USERNAME", "DNS_SERVICE_IP", "ADDITIONAL_TAGS",
}  # fmt: skip


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for spec in SETTINGS:
        monkeypatch.delenv(spec.env, raising=False)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("1s", 1), ("300ms", 0.3), ("1m30s", 90), ("2h", 7200), ("1.5h", 5400),
     ("1h2m3.5s", 3723.5), ("10us", 1e-5), ("-5s", -5), ("2000ns", 2e-6)],
)  # fmt: skip
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text).total_seconds() == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "1d", "s", "1m x", "1.2.3s", "m5"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_format_duration_round_trips() -> None:
    for text in ["1s", "300ms", "1m30s", "2h0m0s", "15m0s", "0s"]:
        assert format_duration(parse_duration(text)) == text


def test_defaults_match_karpenter() -> None:
    s = load_settings({"CLUSTER_NAME": "c"})
    assert s.provider == "aws"
    assert s.batch.idle_duration == timedelta(seconds=1)
    assert s.batch.max_duration == timedelta(seconds=10)
    assert (s.kube_client.qps, s.kube_client.burst) == (200, 300)
    assert (s.server.metrics_port, s.server.health_probe_port) == (8080, 8081)
    assert s.server.bind_address == "0.0.0.0"
    assert s.leader_election.system_namespace == "kube-system"
    assert not s.leader_election.disabled and s.leader_election.pod_name
    assert s.aws.vm_memory_overhead_percent == 0.075
    assert (s.preference_policy, s.min_values_policy) == ("Respect", "Strict")
    assert s.nodeclaim.launch_timeout == timedelta(minutes=5)
    assert s.nodeclaim.registration_timeout == timedelta(minutes=15)
    assert s.disruption.command_timeout == timedelta(minutes=10)
    assert s.feature_gates == FeatureGates()
    assert s.feature_gates.reserved_capacity and not s.feature_gates.node_repair


def test_environment_is_read_and_flags_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVIDER", "kwok")
    monkeypatch.setenv("BATCH_IDLE_DURATION", "2s")
    monkeypatch.setenv("BATCH_MAX_DURATION", "20s")
    monkeypatch.setenv("FEATURE_GATES", "NodeRepair=true,SpotToSpotConsolidation=true")
    monkeypatch.setenv("DISABLE_LEADER_ELECTION", "true")
    s = load_settings({"BATCH_IDLE_DURATION": "3s"})
    assert s.provider == "kwok"
    assert s.batch.idle_duration == timedelta(seconds=3)  # flag
    assert s.batch.max_duration == timedelta(seconds=20)  # env
    assert s.feature_gates.node_repair and s.feature_gates.spot_to_spot_consolidation
    assert s.feature_gates.reserved_capacity  # untouched gates keep their defaults
    assert s.leader_election.disabled


def test_the_disruption_command_timeout_is_set_like_the_other_timeouts() -> None:
    s = load_settings({"CLUSTER_NAME": "c", "DISRUPTION_COMMAND_TIMEOUT": "45s"})
    assert s.disruption.command_timeout == timedelta(seconds=45)


def test_every_design_setting_has_a_flag_with_env_name_and_default() -> None:
    assert {spec.env for spec in SETTINGS} == DESIGN_SETTINGS | AZURE_SETTINGS
    parser = argparse.ArgumentParser()
    operator.add_arguments(parser)
    help_text = " ".join(parser.format_help().split())
    for spec in SETTINGS:
        assert spec.flag in help_text
        assert f"env {spec.env}" in help_text
    args = parser.parse_args(
        ["--batch-idle-duration", "4s", "--isolated-vpc", "--provider=kwok", "--metrics-port", "0"]
    )
    overrides = operator._overrides(args)
    assert overrides == {
        "BATCH_IDLE_DURATION": "4s",
        "ISOLATED_VPC": "true",
        "PROVIDER": "kwok",
        "METRICS_PORT": "0",
    }
    s = load_settings(overrides)
    assert s.aws.isolated_vpc and s.server.metrics_port == 0


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"PROVIDER": "gcp"}, "PROVIDER"),
        ({"BATCH_IDLE_DURATION": "soon"}, "BATCH_IDLE_DURATION"),
        ({"BATCH_MAX_DURATION": "0s"}, "BATCH_MAX_DURATION"),
        ({"FEATURE_GATES": "Teleport=true"}, "FEATURE_GATES"),
        ({"FEATURE_GATES": "NodeRepair=maybe"}, "FEATURE_GATES"),
        ({"KUBE_CLIENT_QPS": "-1"}, "KUBE_CLIENT_QPS"),
        ({"KUBE_CLIENT_BURST": "many"}, "KUBE_CLIENT_BURST"),
        ({"METRICS_PORT": "70000"}, "METRICS_PORT"),
        ({"BIND_ADDRESS": "localhost"}, "BIND_ADDRESS"),
        ({"VM_MEMORY_OVERHEAD_PERCENT": "1.5"}, "VM_MEMORY_OVERHEAD_PERCENT"),
        ({"RESERVED_ENIS": "-2"}, "RESERVED_ENIS"),
        ({"PREFERENCE_POLICY": "Maybe"}, "PREFERENCE_POLICY"),
        ({"MIN_VALUES_POLICY": "Loose"}, "MIN_VALUES_POLICY"),
        ({"LAUNCH_TIMEOUT": "forever"}, "LAUNCH_TIMEOUT"),
        ({"REGISTRATION_TIMEOUT": "-1m"}, "REGISTRATION_TIMEOUT"),
        ({"DISRUPTION_COMMAND_TIMEOUT": "soon"}, "DISRUPTION_COMMAND_TIMEOUT"),
        ({"LOG_LEVEL": "chatty"}, "LOG_LEVEL"),
        ({"INSTANCE_TYPES_FILE_PATH": "/nonexistent.json"}, "INSTANCE_TYPES_FILE_PATH"),
        ({"DISABLE_LEADER_ELECTION": "perhaps"}, "DISABLE_LEADER_ELECTION"),
    ],
)
def test_bad_values_name_the_setting(overrides: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings({"CLUSTER_NAME": "c", **overrides})
    assert named in str(info.value)


def test_aws_needs_a_cluster_name_kwok_does_not() -> None:
    with pytest.raises(SettingsError, match="CLUSTER_NAME"):
        load_settings()
    assert load_settings({"PROVIDER": "kwok"}).cluster_name == ""


def test_bad_environment_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBE_CLIENT_BURST", "0")
    with pytest.raises(SettingsError, match="KUBE_CLIENT_BURST"):
        load_settings({"PROVIDER": "kwok"})


def test_instance_types_file_must_exist(tmp_path: Path) -> None:
    catalogue = tmp_path / "types.json"
    catalogue.write_text("[]")
    s = load_settings({"PROVIDER": "kwok", "INSTANCE_TYPES_FILE_PATH": str(catalogue)})
    assert s.kwok.instance_types_file_path == catalogue


def test_karpy_run_refuses_bad_settings_with_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    operator.add_arguments(parser)
    status = operator.run(parser.parse_args(["--provider", "kwok", "--batch-idle-duration", "x"]))
    assert status == 2
    assert "BATCH_IDLE_DURATION" in capsys.readouterr().err


def test_default_topology_spread_constraints_are_read_and_checked_by_field() -> None:
    assert load_settings({"CLUSTER_NAME": "c"}).default_topology_spread == ()
    s = load_settings(
        {
            "CLUSTER_NAME": "c",
            "DEFAULT_TOPOLOGY_SPREAD_CONSTRAINTS": '[{"maxSkew": 2, "topologyKey": '
            '"topology.kubernetes.io/zone"}, {"maxSkew": 1, "topologyKey": '
            '"kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}]',
        }
    )
    assert [c.to_constraint() for c in s.default_topology_spread] == [
        {
            "maxSkew": 2,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
        },
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
        },
    ]
    with pytest.raises(SettingsError) as bad:
        load_settings(
            {
                "CLUSTER_NAME": "c",
                "DEFAULT_TOPOLOGY_SPREAD_CONSTRAINTS": '[{"maxSkew": 1, "topologyKey": "z"}, '
                '{"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "Never"}]',
            }
        )
    assert any(
        "DEFAULT_TOPOLOGY_SPREAD_CONSTRAINTS" in p and "[1].maxSkew" in p
        for p in bad.value.problems
    )
    assert any("[1].whenUnsatisfiable" in p for p in bad.value.problems)
    with pytest.raises(SettingsError, match="not a JSON list"):
        load_settings({"CLUSTER_NAME": "c", "DEFAULT_TOPOLOGY_SPREAD_CONSTRAINTS": "zone"})
