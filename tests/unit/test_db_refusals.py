"""``refusals_as_problems`` (core/hold_store.py): the one place a refusal an onsale
SQL function raises (SQLSTATE OS400/OS404/OS409) becomes a problem, for the hold,
release and checkout statements alike."""

from __future__ import annotations

import asyncpg
import pytest

from onsale.core.hold_store import refusals_as_problems
from onsale.kernel.problems import Problem


def db_error(state: str, message: str = "boom", detail: str | None = None) -> BaseException:
    fields = {"C": state, "M": message}
    if detail is not None:
        fields["D"] = detail
    error: BaseException = asyncpg.PostgresError.new(fields)
    return error


@pytest.mark.parametrize(("state", "status"), [("OS400", 400), ("OS404", 404), ("OS409", 409)])
def test_a_refusal_is_its_problem(state: str, status: int) -> None:
    raised = db_error(state, "seats_unavailable", '{"seat_ids": [3], "code": "x"}')
    with pytest.raises(Problem) as caught, refusals_as_problems():
        raise raised
    problem = caught.value
    assert (problem.status, problem.code) == (status, "seats_unavailable")
    assert problem.extra == {"seat_ids": [3], "db_code": "x"}  # Problem's own names kept apart
    assert problem.__cause__ is raised


def test_a_detail_that_is_not_an_object_adds_nothing() -> None:
    for detail in ("not json", "[1, 2]", None):
        with pytest.raises(Problem) as caught, refusals_as_problems():
            raise db_error("OS404", "hold_not_found", detail)
        assert caught.value.code == "hold_not_found" and caught.value.extra == {}


@pytest.mark.parametrize("state", ["OSRTY", "40P01", "23505", "57014"])
def test_every_other_error_passes_through_unchanged(state: str) -> None:
    raised = db_error(state)
    with pytest.raises(asyncpg.PostgresError) as caught, refusals_as_problems():
        raise raised
    assert caught.value is raised


def test_nothing_raised_is_nothing_changed() -> None:
    with refusals_as_problems():
        value = 1
    assert value == 1
    with pytest.raises(ValueError), refusals_as_problems():
        raise ValueError("not the database's")
