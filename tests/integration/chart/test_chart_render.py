"""The charts as helm lints and renders them (no cluster): Karpenter's value names land in the
environment karpy reads, the Deployment's command line is one karpy accepts, the pod is placed
and secured as Karpenter's is, and the RBAC follows the provider."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml

from karpy.cli import parse as parse_cli
from karpy.settings import FeatureGates, Settings, load_settings
from tests.containerfile import container_argv, container_env
from tests.containerfile import load as load_containerfile
from tests.integration.chart.chart_support import (
    CHART,
    CRD_CHART,
    JSON,
    REPO,
    Helm,
    by_kind,
    container,
    one,
    rules,
)

SELECTOR = {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": "karpenter"}
DOWNWARD = {"metadata.namespace": "karpenter", "metadata.name": "karpenter-7d9f-abcde"}
# (namespace, apiGroup, resource, verb, resourceName); "" namespace: the ClusterRole
KWOK_ONLY = {
    ("", "", "nodes", "create", ""),
    ("", "", "nodes/status", "patch", ""),
    ("kube-node-lease", "coordination.k8s.io", "leases", "create", ""),
    ("kube-node-lease", "coordination.k8s.io", "leases", "get", ""),
    ("kube-node-lease", "coordination.k8s.io", "leases", "patch", ""),
}
AWS_ONLY = {
    ("", "karpenter.k8s.aws", "ec2nodeclasses", "patch", ""),
    ("", "karpenter.k8s.aws", "ec2nodeclasses/status", "patch", ""),
    ("kube-system", "", "services", "get", "kube-dns"),
}


def settings_of(docs: list[JSON]) -> Settings:
    """What karpy would run with: the rendered env (downward API filled) through karpy's own
    settings loader, which refuses a variable that is not a karpy setting."""
    env = container_env(container(docs), DOWNWARD)
    return load_settings(env)


def labels_of(doc: JSON) -> dict[str, str]:
    labels: dict[str, str] = doc["metadata"].get("labels") or {}
    return labels


def all_rules(docs: list[JSON]) -> set[tuple[str, ...]]:
    """The controller's own rights (the aggregated admin/edit roles are people's)."""
    out: set[tuple[str, ...]] = set()
    for doc in docs:
        aggregated = any(
            k.startswith("rbac.authorization.k8s.io/aggregate-to-") for k in labels_of(doc)
        )
        if doc["kind"] in {"Role", "ClusterRole"} and not aggregated:
            namespace = doc["metadata"].get("namespace", "")
            out |= {(namespace, *rule) for rule in rules(doc)}
    return out


def test_both_charts_lint_strict(helm: Helm) -> None:
    helm("lint", "--strict", str(CHART), "--set", "settings.clusterName=my-cluster")
    helm("lint", "--strict", str(CHART), "--set", "provider=kwok")
    helm("lint", "--strict", str(CRD_CHART))


def test_defaults_match_karpenters_chart(helm: Helm) -> None:
    docs = helm.template(sets=["settings.clusterName=my-cluster"], namespace="karpenter")
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(
        [
            "ClusterRole",
            "ClusterRole",
            "ClusterRole",
            "ClusterRoleBinding",
            "Deployment",
            "PodDisruptionBudget",
            "Role",
            "Role",
            "RoleBinding",
            "RoleBinding",
            "Service",
            "ServiceAccount",
        ]
    )
    aggregated = {"karpenter-admin": "admin", "karpenter-edit": "edit"}
    for doc in docs:
        assert doc["metadata"]["labels"].items() >= SELECTOR.items()
        name = doc["metadata"]["name"]
        if doc["metadata"].get("namespace") == "kube-system":
            # Karpenter's `-dns` Role: the kube-dns Service, for the cluster DNS default
            assert name == "karpenter-dns", doc["kind"]
            continue
        if doc["kind"] == "ClusterRole" and name in aggregated:
            label = f"rbac.authorization.k8s.io/aggregate-to-{aggregated.pop(name)}"
            assert doc["metadata"]["labels"][label] == "true"
        else:
            assert name == "karpenter", doc["kind"]
        if doc["kind"] not in {"ClusterRole", "ClusterRoleBinding"}:
            assert doc["metadata"]["namespace"] == "karpenter", doc["kind"]

    deployment = one(docs, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["revisionHistoryLimit"] == 10
    assert deployment["spec"]["strategy"] == {"rollingUpdate": {"maxUnavailable": 1}}
    assert deployment["spec"]["selector"]["matchLabels"] == SELECTOR
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["template"]["metadata"]["labels"] == SELECTOR
    assert not aggregated, aggregated
    assert pod["serviceAccountName"] == "karpenter"
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    assert pod["securityContext"] == {
        "fsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    node_term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert node_term["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}]}
    ]
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti == [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": SELECTOR}}
    ]
    assert pod["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": SELECTOR},
        }
    ]
    ctr = container(docs)
    assert ctr["image"] == "ghcr.io/karpy/karpy:0.1.0"
    assert "resources" not in ctr
    assert ctr["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert {p["name"]: p["containerPort"] for p in ctr["ports"]} == {
        "http-metrics": 8080,
        "http": 8081,
    }
    assert ctr["livenessProbe"] == {
        "httpGet": {"path": "/healthz", "port": "http"},
        "initialDelaySeconds": 30,
        "timeoutSeconds": 30,
    }
    assert ctr["readinessProbe"] == {
        "httpGet": {"path": "/readyz", "port": "http"},
        "initialDelaySeconds": 5,
        "timeoutSeconds": 30,
    }
    assert {"name": "tmp", "mountPath": "/tmp"} in ctr["volumeMounts"]

    settings = settings_of(docs)
    assert settings.provider == "aws"
    assert settings.cluster_name == "my-cluster"
    assert settings.log_level == "info"
    assert settings.feature_gates == FeatureGates()
    assert settings.batch.idle_duration == timedelta(seconds=1)
    assert settings.batch.max_duration == timedelta(seconds=10)
    assert settings.aws.vm_memory_overhead_percent == 0.075
    assert settings.aws.reserved_enis == 0
    assert settings.aws.isolated_vpc is False
    assert (settings.server.metrics_port, settings.server.health_probe_port) == (8080, 8081)
    assert settings.leader_election.system_namespace == "karpenter"
    assert settings.leader_election.pod_name == DOWNWARD["metadata.name"]
    assert settings.leader_election.disabled is False

    assert one(docs, "PodDisruptionBudget")["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": SELECTOR},
    }
    service = one(docs, "Service")["spec"]
    assert service["selector"] == SELECTOR
    assert service["ports"] == [
        {"name": "http-metrics", "port": 8080, "targetPort": "http-metrics", "protocol": "TCP"}
    ]


def test_the_container_command_line_is_one_karpy_accepts(helm: Helm) -> None:
    """ENTRYPOINT + the rendered args, parsed by karpy's CLI: `karpy run`."""
    stage = load_containerfile().final
    for sets in (["settings.clusterName=c"], ["provider=kwok"]):
        argv = container_argv(container(helm.template(sets=sets)), stage)
        assert argv == ["karpy", "run"]
        assert parse_cli(argv[1:]).command == "run"


def test_every_value_set(helm: Helm) -> None:
    values: dict[str, Any] = {
        "provider": "kwok",
        "nameOverride": "karpenter",
        "additionalLabels": {"team": "platform"},
        "additionalAnnotations": {"owner": "platform"},
        "image": {
            "repository": "registry.example.com/karpy",
            "tag": "9.9.9",
            "digest": "sha256:" + "ab" * 32,
        },
        "serviceAccount": {
            "name": "karpenter-sa",
            "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/K"},
        },
        "replicas": 3,
        "revisionHistoryLimit": 3,
        "strategy": {"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
        "imagePullSecrets": [{"name": "registry"}],
        "terminationGracePeriodSeconds": 60,
        "podSecurityContext": {"fsGroup": 1000},
        "extraVolumes": [{"name": "catalog", "configMap": {"name": "kwok-catalog"}}],
        "service": {"annotations": {"prometheus.io/port": "9090"}},
        "podDisruptionBudget": {"name": "karpenter-pdb", "maxUnavailable": 2},
        "priorityClassName": "high",
        # maps merge with the defaults (helm); null removes a default
        "nodeSelector": {"kubernetes.io/os": None, "pool": "system"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "system"}],
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": None,
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}
                ],
            }
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 2,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
            }
        ],
        "podAnnotations": {"prometheus.io/scrape": "true"},
        "podLabels": {"tier": "control"},
        "serviceMonitor": {
            "enabled": True,
            "additionalLabels": {"release": "prom"},
            "endpointConfig": {"interval": "15s"},
        },
        "logLevel": "debug",
        "controller": {
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
            "env": [
                {"name": "KUBE_CLIENT_QPS", "value": "50"},
                {"name": "LAUNCH_TIMEOUT", "value": "2m"},
            ],
            "envFrom": [{"configMapRef": {"name": "karpy-extra"}}],
            "extraVolumeMounts": [{"name": "catalog", "mountPath": "/catalog"}],
            "metrics": {"port": 9090},
            "healthProbe": {"port": 9091},
        },
        "settings": {
            "clusterName": "prod",
            "clusterEndpoint": "https://api.prod.example.com",
            "interruptionQueue": "prod-interruptions",
            "batchIdleDuration": "2s",
            "batchMaxDuration": "30s",
            "vmMemoryOverheadPercent": 0.1,
            "reservedENIs": "2",
            "isolatedVPC": True,
            "preferencePolicy": "Ignore",
            "minValuesPolicy": "BestEffort",
            "defaultTopologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone"}
            ],
            "featureGates": {"nodeRepair": True, "spotToSpotConsolidation": True},
        },
    }
    docs = helm.template(values, namespace="karpenter")
    objects = by_kind(docs)
    for doc in docs:
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "karpenter"
        assert labels["team"] == "platform"
        assert doc["metadata"]["annotations"]["owner"] == "platform", doc["kind"]
    sa = objects[("ServiceAccount", "karpenter-sa")]
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].endswith(":role/K")
    binding = objects[("ClusterRoleBinding", "karpenter")]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "karpenter-sa", "namespace": "karpenter"}
    ]
    assert objects[("PodDisruptionBudget", "karpenter-pdb")]["spec"]["maxUnavailable"] == 2
    monitor = objects[("ServiceMonitor", "karpenter")]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["endpoints"] == [
        {"port": "http-metrics", "path": "/metrics", "interval": "15s"}
    ]
    service = objects[("Service", "karpenter")]
    assert service["metadata"]["annotations"] == {"prometheus.io/port": "9090", "owner": "platform"}
    assert objects[("Service", "karpenter")]["spec"]["ports"][0]["port"] == 9090

    selector = {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": "karpenter"}
    deployment = objects[("Deployment", "karpenter")]
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["revisionHistoryLimit"] == 3
    assert deployment["spec"]["strategy"] == values["strategy"]
    template = deployment["spec"]["template"]
    assert template["metadata"]["labels"] == {**selector, "tier": "control"}
    assert template["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
    pod = template["spec"]
    assert pod["serviceAccountName"] == "karpenter-sa"
    assert pod["priorityClassName"] == "high"
    assert pod["imagePullSecrets"] == [{"name": "registry"}]
    assert pod["terminationGracePeriodSeconds"] == 60
    assert pod["securityContext"]["fsGroup"] == 1000
    assert values["extraVolumes"][0] in pod["volumes"]
    assert pod["nodeSelector"] == {"pool": "system"}
    assert pod["tolerations"] == values["tolerations"]
    assert pod["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}
                        ]
                    }
                ]
            }
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": selector},
                    },
                }
            ]
        },
    }
    assert pod["topologySpreadConstraints"] == [
        {**values["topologySpreadConstraints"][0], "labelSelector": {"matchLabels": selector}}
    ]
    ctr = container(docs)
    assert ctr["image"] == "registry.example.com/karpy:9.9.9@sha256:" + "ab" * 32
    assert ctr["resources"] == values["controller"]["resources"]
    assert ctr["envFrom"] == [{"configMapRef": {"name": "karpy-extra"}}]
    assert {"name": "catalog", "mountPath": "/catalog"} in ctr["volumeMounts"]
    assert {p["name"]: p["containerPort"] for p in ctr["ports"]} == {
        "http-metrics": 9090,
        "http": 9091,
    }

    settings = settings_of(docs)
    assert settings.provider == "kwok"
    assert settings.cluster_name == "prod"
    assert settings.log_level == "debug"
    assert settings.aws.cluster_endpoint == "https://api.prod.example.com"
    assert settings.aws.interruption_queue == "prod-interruptions"
    assert settings.aws.vm_memory_overhead_percent == 0.1
    assert settings.aws.reserved_enis == 2
    assert settings.aws.isolated_vpc is True
    assert settings.batch.idle_duration == timedelta(seconds=2)
    assert settings.batch.max_duration == timedelta(seconds=30)
    assert settings.preference_policy == "Ignore"
    assert settings.min_values_policy == "BestEffort"
    assert [c.to_constraint() for c in settings.default_topology_spread] == [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
        }
    ]
    assert settings.feature_gates == FeatureGates(node_repair=True, spot_to_spot_consolidation=True)
    assert (settings.server.metrics_port, settings.server.health_probe_port) == (9090, 9091)
    assert settings.kube_client.qps == 50.0  # controller.env
    assert settings.nodeclaim.launch_timeout == timedelta(minutes=2)


@pytest.mark.parametrize(
    ("release", "sets", "fullname", "name"),
    [
        ("karpenter", [], "karpenter", "karpenter"),
        ("karpy", [], "karpy-karpenter", "karpenter"),
        ("karpy", ["nameOverride=karpy"], "karpy", "karpy"),
        ("r1", ["fullnameOverride=karpenter"], "karpenter", "karpenter"),
    ],
)
def test_name_and_fullname_overrides(
    helm: Helm, release: str, sets: list[str], fullname: str, name: str
) -> None:
    docs = helm.template(release=release, sets=["provider=kwok", *sets])
    for doc in docs:
        meta = doc["metadata"]
        assert meta["labels"]["app.kubernetes.io/name"] == name
        assert meta["labels"]["app.kubernetes.io/instance"] == release
        suffix = "-kwok" if meta.get("namespace") == "kube-node-lease" else ""
        if doc["kind"] == "ClusterRole" and meta["name"] != fullname:
            suffix = meta["name"].removeprefix(fullname)
            assert suffix in {"-admin", "-edit"}, meta["name"]
        assert meta["name"] == fullname + suffix, doc["kind"]
    pod = one(docs, "Deployment")["spec"]["template"]
    assert pod["metadata"]["labels"]["app.kubernetes.io/name"] == name
    assert pod["spec"]["serviceAccountName"] == fullname


def test_invalid_values_fail_naming_the_value(helm: Helm) -> None:
    assert "settings.clusterName is required" in helm.template_error()
    assert "provider must be aws, azure or kwok" in helm.template_error("provider=gce")
    assert "settings.clusterName is required with provider azure" in helm.template_error(
        "provider=azure"
    )
    assert "serviceAccount.name is required" in helm.template_error(
        "provider=kwok", "serviceAccount.create=false"
    )


def test_rbac_follows_the_provider(helm: Helm) -> None:
    aws = helm.template(sets=["settings.clusterName=c"], namespace="karpenter")
    kwok = helm.template(sets=["provider=kwok"], namespace="karpenter")
    aws_rules, kwok_rules = all_rules(aws), all_rules(kwok)
    assert not aws_rules & KWOK_ONLY
    assert kwok_rules - aws_rules == KWOK_ONLY
    assert aws_rules - kwok_rules == AWS_ONLY
    # CapacityBuffers (both providers): read, status written, PodTemplates read and written
    for group, resource, verb in (
        ("autoscaling.x-k8s.io", "capacitybuffers", "watch"),
        ("autoscaling.x-k8s.io", "capacitybuffers/status", "patch"),
        ("", "podtemplates", "list"),
        ("", "podtemplates", "create"),
        ("apps", "deployments", "get"),
    ):
        assert ("", group, resource, verb, "") in aws_rules & kwok_rules, (resource, verb)
    # kwok's Lease rights are in kube-node-lease only; the leader Lease only in the release
    # namespace and only by name (besides create, which cannot be limited by name)
    node_lease = by_kind(kwok)[("Role", "karpenter-kwok")]
    assert node_lease["metadata"]["namespace"] == "kube-node-lease"
    assert rules(node_lease) == {
        ("coordination.k8s.io", "leases", "create", ""),
        ("coordination.k8s.io", "leases", "get", ""),
        ("coordination.k8s.io", "leases", "patch", ""),
    }
    leader = by_kind(aws)[("Role", "karpenter")]
    assert leader["metadata"]["namespace"] == "karpenter"
    assert {r for r in rules(leader) if r[2] != "create"} == {
        ("coordination.k8s.io", "leases", verb, "karpenter-leader-election")
        for verb in ("get", "watch", "update", "patch")
    }
    # least privilege: no wildcard, no secrets or configmaps, nothing creates pods
    flat = aws_rules | kwok_rules
    assert not any("*" in (g, r, v) for _, g, r, v, _ in flat)
    assert not any(r in {"secrets", "configmaps"} for _, _, r, _, _ in flat)
    assert ("", "", "pods", "create", "") not in flat


def test_azure_reads_aksnodeclasses_writes_their_status_and_takes_its_settings_from_env(
    helm: Helm,
) -> None:
    aws = helm.template(sets=["settings.clusterName=c"], namespace="karpenter")
    docs = helm.template(
        sets=[
            "provider=azure",
            "settings.clusterName=aks",
            "settings.clusterEndpoint=https://aks-dns-12345678.hcp.westus2.azmk8s.io:443",
            "controller.env[0].name=ARM_SUBSCRIPTION_ID",
            "controller.env[0].value=00000000-0000-0000-0000-000000000001",
            "controller.env[1].name=LOCATION",
            "controller.env[1].value=westus2",
            "controller.env[2].name=AZURE_NODE_RESOURCE_GROUP",
            "controller.env[2].value=MC_rg_aks_westus2",
            "controller.env[3].name=VNET_SUBNET_ID",
            "controller.env[3].value=/subscriptions/s/resourceGroups/rg/providers/"
            "Microsoft.Network/virtualNetworks/v/subnets/s",
            "controller.env[4].name=KUBELET_BOOTSTRAP_TOKEN",
            "controller.env[4].value=abcdef.0123456789abcdef",
            "controller.env[5].name=DNS_SERVICE_IP",
            "controller.env[5].value=10.2.0.10",
            "settings.tags.team=web",
            "settings.tags.env=prod",
            "serviceAccount.annotations.azure\\.workload\\.identity/client-id=abc",
        ],
        extra=["--set-string", "podLabels.azure\\.workload\\.identity/use=true"],
        namespace="karpenter",
    )
    assert all_rules(docs) - all_rules(aws) == {
        ("", "karpenter.azure.com", "aksnodeclasses", "get", ""),
        ("", "karpenter.azure.com", "aksnodeclasses", "list", ""),
        ("", "karpenter.azure.com", "aksnodeclasses", "watch", ""),
        ("", "karpenter.azure.com", "aksnodeclasses", "patch", ""),
        ("", "karpenter.azure.com", "aksnodeclasses/status", "patch", ""),
    }
    # Nodes' --cluster-dns is the kube-dns Service's ClusterIP unless DNS_SERVICE_IP is set:
    # the `-dns` Role grants reading that one Service, and nothing else in kube-system.
    dns = by_kind(docs)[("Role", "karpenter-dns")]
    assert dns["metadata"]["namespace"] == "kube-system"
    assert rules(dns) == {("", "services", "get", "kube-dns")}
    binding = by_kind(docs)[("RoleBinding", "karpenter-dns")]
    assert binding["roleRef"]["name"] == "karpenter-dns"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "karpenter", "namespace": "karpenter"}
    ]
    assert {r for r in all_rules(docs) if r[0] == "kube-system"} == {
        ("kube-system", "", "services", "get", "kube-dns")
    }
    settings = settings_of(docs)
    assert (settings.provider, settings.cluster_name) == ("azure", "aks")
    assert settings.azure.location == "westus2"
    assert settings.azure.node_resource_group == "MC_rg_aks_westus2"
    assert settings.azure.dns_service_ip == "10.2.0.10"
    # The upstream chart's settings.tags, as ADDITIONAL_TAGS
    assert settings.azure.additional_tags == {"team": "web", "env": "prod"}
    account = one(docs, "ServiceAccount")
    assert account["metadata"]["annotations"]["azure.workload.identity/client-id"] == "abc"
    pod = one(docs, "Deployment")["spec"]["template"]
    assert pod["metadata"]["labels"]["azure.workload.identity/use"] == "true"


def test_crds_ship_in_both_charts_as_generated(helm: Helm) -> None:
    generated = {
        p.name: yaml.safe_load(p.read_text()) for p in (REPO / "manifests" / "crds").glob("*.yaml")
    }
    # Karpenter's five (with NodeOverlay), the Azure provider's AKSNodeClass, SchedulingConfig,
    # CapacityBuffer
    assert len(generated) == 8
    names = {doc["metadata"]["name"] for doc in generated.values()}
    crd_chart = helm.template(chart=CRD_CHART)
    assert {d["metadata"]["name"] for d in crd_chart} == names
    assert sorted(crd_chart, key=lambda d: d["metadata"]["name"]) == sorted(
        generated.values(), key=lambda d: d["metadata"]["name"]
    )
    with_crds = helm.template(sets=["provider=kwok"], extra=["--include-crds"])
    assert {
        d["metadata"]["name"] for d in with_crds if d["kind"] == "CustomResourceDefinition"
    } == names


EXAMPLE_VALUES = {"aws": "aws-values.yaml", "kwok": "kwok-kind-values.yaml"}


@pytest.mark.parametrize("provider", ["aws", "kwok"])
def test_the_readmes_example_values_render(helm: Helm, provider: str) -> None:
    values = CHART / "examples" / EXAMPLE_VALUES[provider]
    docs = helm.template(extra=["-f", str(values)])
    assert settings_of(docs).provider == provider
    if provider == "aws":
        # Karpenter's names: `kubectl describe sa karpenter`, `-l app.kubernetes.io/name=karpenter`
        sa = one(docs, "ServiceAccount")
        assert sa["metadata"]["name"] == "karpenter"
        assert sa["metadata"]["labels"]["app.kubernetes.io/name"] == "karpenter"
        assert "eks.amazonaws.com/role-arn" in sa["metadata"]["annotations"]
    else:
        assert container(docs)["imagePullPolicy"] == "Never"
        assert one(docs, "Deployment")["spec"]["template"]["spec"].get("tolerations") is None
