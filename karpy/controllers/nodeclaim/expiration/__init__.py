"""NodeClaim expiration: forceful deletion at `creationTimestamp + expireAfter`."""

from __future__ import annotations

from karpy.controllers.nodeclaim.expiration.controller import REASON_EXPIRED, ExpirationController

__all__ = ["REASON_EXPIRED", "ExpirationController"]
