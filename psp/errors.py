"""API errors: ``{"error": {"type", "code", "message", ...}}`` with an HTTP status."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(self, status: int, type_: str, message: str, *, code: str | None = None,
                 **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.code = code
        self.message = message
        self.extra = extra

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"type": self.type}
        if self.code is not None:
            error["code"] = self.code
        error["message"] = self.message
        error.update(self.extra)
        return {"error": error}


def authentication() -> ApiError:
    return ApiError(401, "authentication_error",
                    "Invalid API key provided: send 'Authorization: Bearer <api_key>'.")


def invalid(param: str | None, message: str, code: str = "parameter_invalid") -> ApiError:
    return ApiError(400, "invalid_request_error", message, code=code, param=param)


def idempotency_key_missing() -> ApiError:
    return ApiError(400, "invalid_request_error",
                    "Every POST needs an Idempotency-Key header.",
                    code="idempotency_key_missing")


def idempotency_conflict() -> ApiError:
    return ApiError(400, "idempotency_error",
                    "Keys for idempotent requests can only be used with the same parameters "
                    "they were first used with.", code="idempotency_key_in_use")


def idempotency_in_progress() -> ApiError:
    return ApiError(409, "idempotency_error",
                    "There is currently another in-progress request using this "
                    "Idempotency-Key; retry later.", code="idempotency_key_in_use")


def missing(intent_id: str) -> ApiError:
    return ApiError(404, "invalid_request_error", f"No such payment_intent: '{intent_id}'",
                    code="resource_missing", param="id")


def unexpected_state(message: str, intent: dict[str, Any]) -> ApiError:
    return ApiError(400, "invalid_request_error", message,
                    code="payment_intent_unexpected_state", payment_intent=intent)


def card_error(code: str, decline_code: str | None, message: str,
               intent: dict[str, Any]) -> ApiError:
    extra: dict[str, Any] = {"payment_intent": intent}
    if decline_code is not None:
        extra = {"decline_code": decline_code, **extra}
    return ApiError(402, "card_error", message, code=code, **extra)


def api_error() -> ApiError:
    return ApiError(500, "api_error", "Simulated internal error.")
