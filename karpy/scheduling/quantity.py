"""Kubernetes resource quantities, parsed and printed exactly as apimachinery does.

Requests and capacities in manifests are strings such as ``1500m``, ``3100Mi`` or ``1e3``. The
engine works on integers (millicores for CPU, plain units for everything else), so a quantity is
parsed once into an exact count of nano-units (the finest precision Kubernetes keeps: finer input
is rounded up) and remembers its suffix family so that it prints back in canonical form
(``1.5`` -> ``1500m``, ``1.5Gi`` -> ``1536Mi``).
"""

from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache
from typing import Final

__all__ = [
    "Format",
    "Quantity",
    "QuantityError",
    "format_bytes",
    "format_milli",
    "milli_value",
    "parse_quantity",
    "value",
]

NANO: Final = 10**9
# Kubernetes caps every quantity at the largest int64, in units.
MAX_UNITS: Final = 2**63 - 1
_MAX_NANOS: Final = MAX_UNITS * NANO

_NUMBER = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(.*)\Z", re.DOTALL)
_EXPONENT = re.compile(r"[eE]([+-]?\d+)\Z")

_BINARY: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_BY_EXP: Final = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_BY_EXP: Final = {exp: suffix for suffix, exp in _BINARY.items()}


class QuantityError(ValueError):
    """A string is not a valid Kubernetes quantity."""


class Format(Enum):
    """The suffix family a quantity was written with; it is kept for printing."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


class Quantity:
    """An exact quantity: an integer count of nano-units plus the suffix family."""

    __slots__ = ("format", "nanos")

    def __init__(self, nanos: int, fmt: Format = Format.DECIMAL_SI) -> None:
        self.nanos = nanos
        self.format = fmt

    @classmethod
    def parse(cls, text: str) -> Quantity:
        return parse_quantity(text)

    def milli_value(self) -> int:
        """Value in thousandths, rounded up (how CPU requests are compared)."""
        return -((-self.nanos) // 10**6)

    def value(self) -> int:
        """Value in units, rounded up (how memory and counts are compared)."""
        return -((-self.nanos) // NANO)

    def __str__(self) -> str:
        return _canonical(self.nanos, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.nanos == other.nanos

    def __hash__(self) -> int:
        return hash(self.nanos)


def parse_quantity(text: str) -> Quantity:
    """Parse ``text`` as Kubernetes does, or raise `QuantityError` saying what is wrong."""
    if not isinstance(text, str):
        raise QuantityError(f"quantity must be a string or number, not {type(text).__name__}")
    if not text:
        raise QuantityError("quantity is empty")
    match = _NUMBER.match(text)
    if match is None:  # pragma: no cover - the pattern matches every string
        raise QuantityError(f"{text!r} is not a quantity")
    sign, whole, frac, suffix = match.groups()
    frac = frac or ""
    if not whole and not frac:
        raise QuantityError(f"{text!r} is not a quantity: no digits")
    fmt, exp10, exp1024 = _suffix(text, suffix)
    digits = int(whole + frac or "0")
    # value = digits * 10**(exp10 - len(frac)) * 1024**exp1024, in nano-units
    scale = exp10 - len(frac) + 9
    numerator = digits * 1024**exp1024
    # finer than a nano-unit rounds up (away from zero), as Kubernetes does
    nanos = numerator * 10**scale if scale >= 0 else -((-numerator) // 10**-scale)
    nanos = min(nanos, _MAX_NANOS)
    if sign == "-":
        nanos = -nanos
    return Quantity(nanos, fmt)


def _suffix(text: str, suffix: str) -> tuple[Format, int, int]:
    if suffix in _DECIMAL:
        return Format.DECIMAL_SI, _DECIMAL[suffix], 0
    if suffix in _BINARY:
        return Format.BINARY_SI, 0, _BINARY[suffix]
    exp = _EXPONENT.match(suffix)
    if exp is not None:
        return Format.DECIMAL_EXPONENT, int(exp.group(1)), 0
    raise QuantityError(f"{text!r} is not a quantity: unknown suffix {suffix!r}")


def _canonical(nanos: int, fmt: Format) -> str:
    if nanos == 0:
        return "0"
    sign = "-" if nanos < 0 else ""
    magnitude = abs(nanos)
    if fmt is Format.BINARY_SI and magnitude >= 1024 * NANO and magnitude % NANO == 0:
        units = magnitude // NANO
        exp = 0
        while exp < 6 and units % 1024 == 0:
            units //= 1024
            exp += 1
        return f"{sign}{units}{_BINARY_BY_EXP.get(exp, '')}"
    # Decimal: the largest multiple-of-3 exponent that loses no precision.
    exp = -9
    mantissa = magnitude
    while exp < 18 and mantissa % 1000 == 0:
        mantissa //= 1000
        exp += 3
    if fmt is Format.DECIMAL_EXPONENT:
        return f"{sign}{mantissa}" + (f"e{exp}" if exp else "")
    return f"{sign}{mantissa}{_DECIMAL_BY_EXP[exp]}"


def milli_value(text: str | int | float) -> int:
    """Parse a quantity (or a plain number from YAML) into thousandths, rounded up."""
    if type(text) is str:
        return _milli_of(text)
    return parse_quantity(_as_text(text)).milli_value()


def value(text: str | int | float) -> int:
    """Parse a quantity (or a plain number from YAML) into units, rounded up."""
    if type(text) is str:
        return _units_of(text)
    return parse_quantity(_as_text(text)).value()


# Manifests repeat a handful of quantities (`100m`, `1Gi`) across thousands of pods.
@lru_cache(maxsize=4096)
def _milli_of(text: str) -> int:
    return parse_quantity(text).milli_value()


@lru_cache(maxsize=4096)
def _units_of(text: str) -> int:
    return parse_quantity(text).value()


def _as_text(text: str | int | float) -> str:
    if isinstance(text, bool):
        raise QuantityError("quantity must be a string or number, not bool")
    if isinstance(text, int):
        return str(text)
    if isinstance(text, float):
        return repr(text) if "e" not in repr(text) else f"{text:f}"
    return text


def format_milli(millis: int) -> str:
    """Print thousandths (a CPU amount) canonically: 1500 -> ``1500m``, 2000 -> ``2``."""
    return _canonical(millis * 10**6, Format.DECIMAL_SI)


def format_bytes(units: int) -> str:
    """Print a byte count canonically in binary form: 3250585600 -> ``3100Mi``."""
    return _canonical(units * NANO, Format.BINARY_SI)
