"""Failure Status bodies become precise exceptions with their details."""

from __future__ import annotations

import pytest

from karpy.kube.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidError,
    NotFoundError,
    ServerError,
    TooManyRequestsError,
    api_error_from_response,
)


def status(code: int, reason: str, message: str = "m", **details: object) -> dict[str, object]:
    return {"kind": "Status", "status": "Failure", "code": code, "reason": reason,
            "message": message, "details": details}  # fmt: skip


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (404, "NotFound", NotFoundError),
        (409, "Conflict", ConflictError),
        (409, "AlreadyExists", AlreadyExistsError),
        (403, "Forbidden", ForbiddenError),
        (410, "Expired", GoneError),
        (422, "Invalid", InvalidError),
        (429, "TooManyRequests", TooManyRequestsError),
        (500, "InternalError", ServerError),
        (503, "ServiceUnavailable", ServerError),
        (418, "Teapot", ApiError),
    ],
)
def test_status_codes_map_to_classes(code: int, reason: str, cls: type[ApiError]) -> None:
    error = api_error_from_response(code, status(code, reason))
    assert type(error) is cls
    assert error.status == code and error.reason == reason


def test_invalid_carries_field_causes() -> None:
    body = status(
        422,
        "Invalid",
        "NodeClaim is invalid",
        causes=[{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.x"}],
    )
    error = api_error_from_response(422, body)
    assert isinstance(error, InvalidError)
    assert error.causes[0].field == "spec.x"
    assert "spec.x" in str(error)


def test_retry_after_from_header_or_details() -> None:
    assert (
        api_error_from_response(
            429, status(429, "TooManyRequests"), retry_after_header="3"
        ).retry_after
        == 3
    )
    error = api_error_from_response(500, status(500, "InternalError", retryAfterSeconds=2))
    assert error.retry_after == 2
    assert api_error_from_response(429, {}, retry_after_header="soon").retry_after is None


def test_non_json_bodies() -> None:
    error = api_error_from_response(502, b"<html>bad gateway</html>")
    assert isinstance(error, ServerError) and "bad gateway" in error.message
