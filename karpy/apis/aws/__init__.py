"""The AWS provider's API group, `karpenter.k8s.aws`."""
