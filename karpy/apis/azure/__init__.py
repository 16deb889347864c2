"""The Azure provider's API group `karpenter.azure.com`."""
