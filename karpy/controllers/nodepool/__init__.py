"""NodePool controllers: validation, NodeClass readiness, registration health, counter, hash
annotations and the `Ready` roll-up (Karpenter's `nodepool.*` controllers)."""
