"""Validation errors shaped like the apiserver's, so a rejection reads the same from either side.

`karpy simulate` and the controllers validate NodePools and NodeClasses in Python; users compare
those messages with what `kubectl apply` prints, so each error names the field path exactly as
the apiserver does (`spec.template.spec.requirements[0].operator`) followed by its message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Appended by the apiserver when schema errors stopped the CEL rules from running.
RULES_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


# Error types, as the apiserver's field.ErrorType; the blocking ones stop CEL evaluation.
INVALID = "Invalid"
TYPE_INVALID = "TypeInvalid"
REQUIRED = "Required"
NOT_SUPPORTED = "NotSupported"
TOO_LONG = "TooLong"
TOO_MANY = "TooMany"
DUPLICATE = "Duplicate"
UNKNOWN_FIELD = "UnknownField"
BLOCKING = frozenset({TYPE_INVALID, REQUIRED, NOT_SUPPORTED, TOO_LONG, TOO_MANY})


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem at one field path."""

    path: str
    message: str
    type: str = INVALID

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ValidationError(ValueError):
    """An object was rejected; `errors` lists every field problem found."""

    def __init__(self, *, kind: str, name: str | None, errors: Sequence[FieldError]) -> None:
        self.kind = kind
        self.name = name
        self.errors: tuple[FieldError, ...] = tuple(errors)
        subject = f'{kind} "{name}"' if name else kind
        details = ", ".join(str(e) for e in self.errors)
        super().__init__(f"{subject} is invalid: [{details}]")

    def paths(self) -> list[str]:
        """The field paths named by the errors, in order."""
        return [e.path for e in self.errors]
