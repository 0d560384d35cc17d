"""kernel.problems: RFC 9457 problem details and their handlers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.exceptions import HTTPException
from starlette.requests import Request

from onsale.kernel.problems import (
    TITLES,
    Problem,
    ProblemResponse,
    http_exception_handler,
    problem_handler,
)


def request() -> Request:
    return Request({"type": "http", "method": "GET", "path": "/x", "headers": []})


def test_body_core_fields() -> None:
    body = Problem(409, "seats_unavailable").body()
    assert body == {
        "type": "https://onsale.dev/problems/seats-unavailable",
        "title": "Some of the requested seats are not available",
        "status": 409,
        "code": "seats_unavailable",
    }


def test_detail_is_included_when_given() -> None:
    body = Problem(400, "invalid_seats", detail="Seat ids are positive integers.").body()
    assert body["detail"] == "Seat ids are positive integers."


@pytest.mark.parametrize("detail", [None, ""])
def test_empty_detail_is_left_out(detail: str | None) -> None:
    assert "detail" not in Problem(400, "invalid_seats", detail=detail).body()


def test_extra_fields_are_merged() -> None:
    problem = Problem(409, "seats_unavailable", detail="taken",
                      unavailable_seat_ids=[3, 4], retry=False)
    body = problem.body()
    assert body["unavailable_seat_ids"] == [3, 4]
    assert body["retry"] is False
    assert body["detail"] == "taken"
    assert body["status"] == 409
    assert body["code"] == "seats_unavailable"
    assert problem.extra == {"unavailable_seat_ids": [3, 4], "retry": False}


def test_attributes() -> None:
    problem = Problem(404, "hold_not_found", detail="gone")
    assert (problem.status, problem.code, problem.detail) == (404, "hold_not_found", "gone")
    assert isinstance(problem, Exception)
    assert str(problem) == "hold_not_found"


def test_body_is_fresh_each_time() -> None:
    problem = Problem(400, "invalid_seats", duplicate_seat_ids=[1])
    problem.body()["status"] = 999
    assert problem.body()["status"] == 400


def test_unknown_code_gets_a_readable_title() -> None:
    body = Problem(418, "short_and_stout").body()
    assert body["title"] == "short and stout"
    assert body["type"] == "https://onsale.dev/problems/short-and-stout"


@pytest.mark.parametrize("code", sorted(TITLES))
def test_every_known_code(code: str) -> None:
    body = Problem(400, code).body()
    assert body["title"] == TITLES[code]
    assert body["type"].endswith("/" + code.replace("_", "-"))
    assert "_" not in body["type"]


def test_titles_are_distinct() -> None:
    assert len(set(TITLES.values())) == len(TITLES)


# --- responses -----------------------------------------------------------------------------


def test_problem_response() -> None:
    problem = Problem(409, "ticket_limit_exceeded", detail="limit 6", limit=6)
    response = ProblemResponse(problem)
    assert response.media_type == "application/problem+json"
    assert response.headers["content-type"] == "application/problem+json"
    assert response.status_code == 409
    assert json.loads(bytes(response.body)) == problem.body()
    assert b'": ' not in response.body and b', "' not in response.body  # compact
    assert response.headers["content-length"] == str(len(response.body))


def test_problem_response_extra_headers() -> None:
    response = ProblemResponse(Problem(503, "inventory_unavailable"), headers={"X-A": "b"})
    assert response.headers["x-a"] == "b"
    assert response.headers["content-type"] == "application/problem+json"


async def test_problem_handler() -> None:
    problem = Problem(404, "event_not_found")
    response = await problem_handler(request(), problem)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert json.loads(bytes(response.body)) == problem.body()
    assert "retry-after" not in response.headers


async def test_problem_handler_sets_retry_after_on_503() -> None:
    response = await problem_handler(request(), Problem(503, "inventory_unavailable"))
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"


@pytest.mark.parametrize(
    ("status", "code"),
    [(404, "not_found"), (405, "method_not_allowed"), (400, "invalid_request"),
     (413, "invalid_request")],
)
async def test_http_exception_handler(status: int, code: str) -> None:
    response = await http_exception_handler(request(), HTTPException(status_code=status))
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    body = json.loads(bytes(response.body))
    assert (body["status"], body["code"]) == (status, code)
    assert body["title"] == TITLES[code]


async def test_method_not_allowed_keeps_the_allow_header() -> None:
    """RFC 9110 §15.5.6: a 405 response MUST carry Allow. Starlette's router raises
    HTTPException(405, headers={"Allow": ...}); the handler must pass those headers on."""
    exc = HTTPException(status_code=405, headers={"Allow": "GET, HEAD"})
    response = await http_exception_handler(request(), exc)
    assert response.status_code == 405
    assert response.headers.get("allow") == "GET, HEAD"



def test_no_problem_detail_is_built_from_an_exception_class_name() -> None:
    """A problem's ``detail`` is a sentence for a person, never ``TimeoutError``."""
    import re
    from pathlib import Path

    root = Path(__file__).parents[2]
    pattern = re.compile(r"detail\s*=\s*[^,\n]*__name__")
    found = [f"{path.relative_to(root)}:{text[:m.start()].count(chr(10)) + 1}"
             for tier in ("core", "edge", "seatmap", "web", "onsale", "psp")
             for path in sorted((root / tier).rglob("*.py"))
             for text in [path.read_text()]
             for m in pattern.finditer(text)]
    assert found == []


async def test_an_outage_no_route_caught_is_its_503_and_is_not_re_raised() -> None:
    """Answered by the inner exception middleware: nothing reaches the server (which
    would log a traceback per request)."""
    import httpx
    import redis.exceptions
    from starlette.applications import Starlette
    from starlette.routing import Route

    from onsale.kernel.errors import error_handlers

    async def down(request: Any) -> Any:
        raise redis.exceptions.ConnectionError("gone")

    async def timeout(request: Any) -> Any:
        raise TimeoutError

    app = Starlette(routes=[Route("/api/holds/x", down), Route("/db", timeout)],
                    exception_handlers=error_handlers())
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=True)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        r = await client.get("/api/holds/x")
        assert (r.status_code, r.json()["code"]) == (503, "admission_unavailable")
        assert r.headers["retry-after"] == "1"
        r = await client.get("/db")
        assert (r.status_code, r.json()["code"]) == (503, "inventory_unavailable")
