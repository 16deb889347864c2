"""Stand-in kubelets for the Azure VMs `karpy run` launches against the fake ARM (which runs
none): the same kwok simulator as for EC2 (`tests.e2e.aws_kubelets`), registering each VM's Node
under the VM's name (`aks-<nodeclaim>`, as AKS names nodes after their VMs)."""

from __future__ import annotations

from tests.e2e.aws_kubelets import EC2Machines

__all__ = ["AzureMachines"]

PROVIDER_ID_PREFIX = "azure:///"


class AzureMachines(EC2Machines):
    """Azure VMs (`azure:///subscriptions/.../virtualMachines/<name>`) as the simulator's
    `Machines`."""

    def serves(self, provider_id: str) -> bool:
        return provider_id.startswith(PROVIDER_ID_PREFIX)

    def node_name(self, provider_id: str) -> str | None:
        return provider_id.rsplit("/", 1)[-1].lower() if self.serves(provider_id) else None
