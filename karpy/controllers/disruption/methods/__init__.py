"""Disruption methods: one module each behind the `Method` protocol (`base`)."""

from karpy.controllers.disruption.methods.base import (
    DECISION_DELETE,
    DECISION_REPLACE,
    Budgets,
    Command,
    ManyCommands,
    Method,
    within_budgets,
)
from karpy.controllers.disruption.methods.drift import Drift
from karpy.controllers.disruption.methods.emptiness import Emptiness
from karpy.controllers.disruption.methods.staticdrift import StaticDrift

__all__ = [
    "DECISION_DELETE",
    "DECISION_REPLACE",
    "Budgets",
    "Command",
    "Drift",
    "Emptiness",
    "ManyCommands",
    "Method",
    "StaticDrift",
    "within_budgets",
]
