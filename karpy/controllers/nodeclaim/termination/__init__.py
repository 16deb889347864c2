"""NodeClaim termination: the `karpenter.sh/termination` finalizer of NodeClaims."""

from __future__ import annotations

from karpy.controllers.nodeclaim.termination.controller import NodeClaimTermination

__all__ = ["NodeClaimTermination"]
