"""Controllers of NodeClaims: lifecycle, termination, expiration, disruption marking."""
