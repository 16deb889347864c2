"""`spec.networkInterfaces` and `spec.connectionTracking` (Karpenter v1.11 and v1.13): the
capacity they give (EFA from the EFA-only interfaces listed, pods without the EFA-only ENIs of
the default card), the types that can take them, and the launch template's interfaces."""

from __future__ import annotations

import copy
from typing import Any

from karpy.apis.aws.v1 import EC2NodeClass
from karpy.cloudprovider.aws.capacity import EFA, capacity, capacity_settings_for
from karpy.cloudprovider.aws.compatibility import compatible
from karpy.cloudprovider.aws.launch import launch_template_data
from karpy.cloudprovider.aws.userdata import BootstrapOptions
from karpy.scheduling.resources import PODS
from tests.unit.cloudprovider.aws.shapes import M5_LARGE, P4D_24XLARGE

P4D = copy.deepcopy(P4D_24XLARGE)
P4D["NetworkInfo"]["EfaSupported"] = True

LAYOUT = [
    {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
    {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
    {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
    {"networkCardIndex": 2, "deviceIndex": 1, "interfaceType": "interface"},
]


def nodeclass(**spec: Any) -> EC2NodeClass:
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "subnetSelectorTerms": [{"id": "subnet-1"}],
                "securityGroupSelectorTerms": [{"id": "sg-1"}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "role": "r",
                **spec,
            },
            "status": {"securityGroups": [{"id": "sg-1"}], "instanceProfile": "p"},
        }
    )


def test_the_layout_sets_efa_and_takes_efa_only_enis_from_pods() -> None:
    settings = capacity_settings_for(nodeclass(networkInterfaces=LAYOUT).spec)
    cap = capacity(P4D, settings)
    assert cap[EFA] == 2  # the two EFA-only interfaces listed, not the type's four
    # 15 ENIs on the default card, one of them EFA-only: 14 x (50 - 1) + 2.
    assert cap[PODS] == 14 * 49 + 2
    assert capacity(P4D, capacity_settings_for(nodeclass().spec))[PODS] == 15 * 49 + 2


def test_types_that_cannot_take_the_layout_are_not_launchable() -> None:
    layout = capacity_settings_for(nodeclass(networkInterfaces=LAYOUT).spec).network_interfaces
    assert compatible(P4D, "AL2023", network_interfaces=layout)
    assert not compatible(M5_LARGE, "AL2023", network_interfaces=layout)  # one card, no EFA
    no_efa = copy.deepcopy(P4D)
    no_efa["NetworkInfo"]["EfaSupported"] = False
    assert not compatible(no_efa, "AL2023", network_interfaces=layout)
    assert compatible(M5_LARGE, "AL2023", network_interfaces=((0, 0, "interface"),))


def test_connection_tracking_needs_nitro() -> None:
    xen = {**M5_LARGE, "Hypervisor": "xen"}
    assert compatible(M5_LARGE, "AL2023", connection_tracking=True)
    assert not compatible(xen, "AL2023", connection_tracking=True)
    assert compatible(xen, "AL2023")


OPTIONS = BootstrapOptions(
    cluster_name="c", cluster_endpoint="https://e", cluster_cidr="10.0.0.0/16"
)


def test_the_template_lays_out_the_interfaces_with_connection_tracking() -> None:
    nc = nodeclass(
        networkInterfaces=LAYOUT,
        connectionTracking={"tcpEstablishedTimeout": 3600, "udpTimeout": 30},
        associatePublicIPAddress=False,
    )
    data = launch_template_data(nc, image_id="ami-1", bootstrap=OPTIONS, tags={}, efa_interfaces=4)
    tracking = {"TcpEstablishedTimeout": 3600, "UdpTimeout": 30}
    assert data["NetworkInterfaces"] == [
        {
            "NetworkCardIndex": 0,
            "DeviceIndex": 0,
            "Groups": ["sg-1"],
            "AssociatePublicIpAddress": False,
            "ConnectionTrackingSpecification": tracking,
        },
        {"NetworkCardIndex": 0, "DeviceIndex": 1, "Groups": ["sg-1"], "InterfaceType": "efa-only"},
        {"NetworkCardIndex": 1, "DeviceIndex": 0, "Groups": ["sg-1"], "InterfaceType": "efa-only"},
        {
            "NetworkCardIndex": 2,
            "DeviceIndex": 1,
            "Groups": ["sg-1"],
            "ConnectionTrackingSpecification": tracking,
        },
    ]


def test_connection_tracking_alone_sets_the_primary_interface() -> None:
    nc = nodeclass(connectionTracking={"udpStreamTimeout": 120})
    data = launch_template_data(nc, image_id="ami-1", bootstrap=OPTIONS, tags={})
    (primary,) = data["NetworkInterfaces"]
    assert primary["ConnectionTrackingSpecification"] == {"UdpStreamTimeout": 120}
