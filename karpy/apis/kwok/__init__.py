"""The kwok provider's API group, `karpenter.kwok.sh`."""
