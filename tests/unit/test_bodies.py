"""Bodies declared once (onsale/kernel/bodies.py): a Struct validates a request and
writes its OpenAPI component; a refusal names the field and carries its stable code."""

from __future__ import annotations

from typing import Annotated, Any

import jsonschema
import msgspec
import pytest
from msgspec import UNSET, Meta, Struct, UnsetType

from onsale.core import request_bodies as core_bodies
from onsale.core.openapi import SCHEMAS
from onsale.kernel.bodies import Codes, components, convert, decode
from onsale.kernel.problems import Problem


class Inner(Struct, forbid_unknown_fields=True):
    """An inner object."""

    n: Annotated[int, Meta(ge=1, le=9)]


class Outer(Struct):
    name: Annotated[str, Meta(min_length=1, max_length=5)]
    inner: Inner | UnsetType = UNSET
    tags: list[str] | None = None


CODES = Codes("invalid_request", inner="invalid_inner",
              tags=("invalid_tags", "Tags are short words."))


def refused(raw: bytes) -> Problem:
    with pytest.raises(Problem) as info:
        decode(raw, Outer, CODES)
    return info.value


def test_a_good_body_decodes_into_its_struct() -> None:
    assert decode(b'{"name": "ab", "inner": {"n": 3}}', Outer, CODES) \
        == Outer("ab", Inner(3))
    assert decode(b'{"name": "ab"}', Outer, CODES).inner is UNSET


@pytest.mark.parametrize(("raw", "code", "detail"), [
    (b'{"name": ""}', "invalid_request", "name: expected `str` of length >= 1."),
    (b'{}', "invalid_request", "Object missing required field `name`"),
    (b'{"name": "a", "inner": {"n": 0}}', "invalid_inner", "inner.n: expected `int` >= 1."),
    (b'{"name": "a", "inner": {"n": 1, "x": 1}}', "invalid_inner",
     "inner: object contains unknown field `x`."),
    (b'{"name": "a", "tags": [1]}', "invalid_tags", "Tags are short words."),
])
def test_a_refusal_names_the_field_and_uses_its_code(raw: bytes, code: str,
                                                     detail: str) -> None:
    problem = refused(raw)
    assert (problem.status, problem.code, problem.detail) == (400, code, detail)


@pytest.mark.parametrize("raw", [b"", b"{", b"[1]", b'"x"', b"null", b"\xff"])
def test_what_is_no_json_object_is_invalid_json(raw: bytes) -> None:
    problem = refused(raw)
    assert (problem.status, problem.code) == (400, "invalid_json")


def test_the_problem_names_the_top_level_field() -> None:
    assert refused(b'{"name": "a", "inner": {"n": 0}}').extra["field"] == "inner"
    assert refused(b'{"name": "a", "tags": [1]}').extra["field"] == "tags"
    assert refused(b'{}').extra["field"] == "name"  # missing


def test_a_status_other_than_400() -> None:
    with pytest.raises(Problem) as info:
        decode(b'{"name": 5}', Outer, Codes("bad_credentials", status=401))
    assert (info.value.status, info.value.code) == (401, "bad_credentials")


def test_convert_refuses_as_decode_does() -> None:
    with pytest.raises(Problem) as info:
        convert({"name": "a", "inner": {"n": True}}, Outer, CODES)
    assert info.value.code == "invalid_inner"


def test_components_are_the_structs_schemas_with_extras() -> None:
    schemas = components([Outer], extra={"Outer": {"minProperties": 1}})
    assert set(schemas) == {"Outer", "Inner"}
    assert schemas["Outer"]["required"] == ["name"]
    assert schemas["Outer"]["minProperties"] == 1
    assert schemas["Inner"]["additionalProperties"] is False
    assert schemas["Inner"]["description"] == "An inner object."
    assert "title" not in schemas["Outer"]


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = {"$ref": f"#/components/schemas/{name}",
              "components": {"schemas": SCHEMAS}}
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("body", [
    {"seat_ids": [1, 2]}, {"best_available": {"quantity": 2, "together": True}},
    {"ga": {"tier_id": 1, "quantity": 3}}, {"seat_ids": [1], "ga": {"tier_id": 1, "quantity": 1}},
    {}, {"seat_ids": [1, 1]}, {"seat_ids": [0]}, {"ga": {"tier_id": 1, "quantity": 1, "x": 1}},
    {"best_available": {"quantity": 101}}, {"seat_ids": [True]},
])
def test_the_hold_schema_and_the_route_agree(body: dict[str, Any]) -> None:
    """What the document accepts, the route accepts; what it refuses, the route refuses
    (the hold body's oneOf and uniqueItems are the parser's extra checks)."""
    from onsale.core.hold_rules import hold_request
    by_schema = _validator("HoldRequest").is_valid(body)
    try:
        hold_request(decode(msgspec.json.encode(body), core_bodies.HoldRequest,
                            core_bodies.HOLD_CODES))
        by_route = True
    except Problem:
        by_route = False
    assert by_schema == by_route, body


@pytest.mark.parametrize(("body", "ok"), [
    ({"payment_method": "pm_card_visa"}, True),
    ({"payment_method": "pm_4242424242424242"}, False),
    ({"payment_method": "4242 4242 4242 4242"}, False),
    ({"payment_method": "pm_x", "save": True}, False),
])
def test_the_checkout_schema_and_the_route_agree(body: dict[str, Any], ok: bool) -> None:
    assert _validator("CheckoutRequest").is_valid(body) is ok
    try:
        convert(body, core_bodies.CheckoutRequest, core_bodies.CHECKOUT_CODES)
        accepted = True
    except Problem:
        accepted = False
    assert accepted is ok


def test_every_operation_documents_the_codes_its_body_is_refused_with() -> None:
    from onsale.compose import api_specs, tiers_for
    from onsale.edge import request_bodies as edge_bodies
    from onsale.kernel.openapi import document
    from tests.unit.test_edge_openapi import SETTINGS

    codes = {**core_bodies.BODY_CODES, **edge_bodies.BODY_CODES}
    doc = document(api_specs(tiers_for("dev", SETTINGS)))
    seen = set()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            ref = str(op.get("requestBody", {}))
            for name, body_codes in codes.items():
                if f"schemas/{name}'" not in ref:
                    continue
                seen.add(name)
                answer = op["responses"].get(str(body_codes.status), {})
                for code in body_codes.codes():
                    assert code in answer.get("description", ""), (method, path, code)
                not_json = op["responses"].get("400", {}).get("description", "")
                assert "invalid_json" in not_json, (method, path)
    assert seen == set(codes)


@pytest.mark.parametrize(("raw", "n"), [
    (b'{"name": "a", "inner": {"n": 3.0}}', 3), (b'{"name": "a", "inner": {"n": 9e0}}', 9)])
def test_an_integral_number_is_the_integer_json_schema_says_it_is(raw: bytes, n: int) -> None:
    body = decode(raw, Outer, CODES)
    assert isinstance(body.inner, Inner) and body.inner.n == n and type(body.inner.n) is int


@pytest.mark.parametrize(("raw", "detail"), [
    (b'{"name": "a", "inner": {"n": 3.5}}', "inner.n: expected `int`, got `float`."),
    (b'{"name": "a", "inner": {"n": 10.0}}', "inner.n: expected `int` <= 9."),
])
def test_other_numbers_are_still_refused_where_integers_go(raw: bytes, detail: str) -> None:
    assert refused(raw).detail == detail


@pytest.mark.parametrize("raw", [
    b'{"name": "\\ud83d"}', b'{"name": "a", "tags": ["\\udc00"]}', b'{"\\ud9df": 1, "name": "a"}'])
def test_a_lone_surrogate_is_no_text(raw: bytes) -> None:
    problem = refused(raw)
    assert (problem.code, "surrogate" in (problem.detail or "")) == ("invalid_json", True)


def test_a_paired_surrogate_is_one_character() -> None:
    assert decode(b'{"name": "\\ud83d\\ude00"}', Outer, CODES).name == "\U0001f600"
