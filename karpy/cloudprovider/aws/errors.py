"""AWS API errors as karpy reads them: botocore's `ClientError` and its error code.

botocore ships no type information, so the one untyped import lives here.
"""

from __future__ import annotations

from botocore.exceptions import (  # type: ignore[import-untyped]
    BotoCoreError,
    ClientError,
)

__all__ = ["BotoCoreError", "ClientError", "error_code", "error_message"]


def error_code(error: BaseException) -> str | None:
    """The AWS error code of a `ClientError` (e.g. `InvalidInstanceID.NotFound`), else None."""
    if isinstance(error, ClientError):
        code = (error.response.get("Error") or {}).get("Code")
        return str(code) if code else None
    return None


def error_message(error: BaseException) -> str:
    """The AWS error message of a `ClientError`, else the exception's text."""
    if isinstance(error, ClientError):
        return str((error.response.get("Error") or {}).get("Message") or error)
    return str(error)
