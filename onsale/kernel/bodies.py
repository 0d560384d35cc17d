"""Request and response bodies declared once, as ``msgspec.Struct`` types: the same type
validates a request (types, ranges, lengths, enums) and generates its OpenAPI component.

A tier declares its bodies as Structs with ``Annotated[..., Meta(...)]`` constraints;
``read_body`` decodes a request straight into one, ``convert`` does the same for a
mapping (the pure parsers' tests), and ``components`` writes the schemas the document
serves. What a schema cannot say (exactly one of three fields, distinct names, a time
before another) stays in the tier's pure parser, after the Struct has checked the shape.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

import msgspec
from starlette.requests import Request

from onsale.kernel.inputs import MAX_BODY, is_json_media_type
from onsale.kernel.problems import Problem

T = TypeVar("T")
_AT = re.compile(r" - at `\$((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*)`$")
_MISSING = re.compile(r"Object missing required field `(\w+)`$")
REF = "#/components/schemas/{name}"


class Codes:
    """Which problem code refuses a body, by the top-level field the error is under:
    ``Codes("invalid_seats", ga="invalid_quantity")``; a field may also fix the detail,
    ``(code, detail)``, where msgspec's own message would not help. The problem names
    the top-level field as ``field``. A body that is no JSON object
    at all is ``invalid_json`` whatever the field codes say."""

    def __init__(self, default: str, /, status: int = 400,
                 **fields: str | tuple[str, str]) -> None:
        self.default, self.status, self.fields = default, status, fields

    def codes(self) -> set[str]:
        """Every code a refusal may carry (``invalid_json`` besides)."""
        return {self.default} | {c[0] if isinstance(c, tuple) else c
                                 for c in self.fields.values()}

    def refuse(self, error: msgspec.ValidationError) -> Problem:
        message = str(error)
        found = _AT.search(message)
        path = found.group(1) if found else ""
        if not path and message.startswith("Expected `object`"):
            return _not_an_object()
        field = path[1:].split(".")[0].split("[")[0] if path.startswith(".") else ""
        missing = _MISSING.match(message)
        if not field and missing:  # a required top-level field left out
            field = missing.group(1)
        code = self.fields.get(field, self.default)
        named = {"field": field} if field else {}
        if isinstance(code, tuple):  # a fixed detail: the value must not be echoed
            return Problem(self.status, code[0], detail=code[1], **named)
        return Problem(self.status, code, detail=_readable(message), **named)


def _readable(message: str) -> str:
    """msgspec's message, with the JSON path written as the field's dotted name:
    ``Expected `int` >= 1 - at `$.ga.quantity``` -> ``ga.quantity: expected `int` >= 1``."""
    found = _AT.search(message)
    if not found:
        return message
    text = message[:found.start()]
    return f"{found.group(1).lstrip('.')}: {text[0].lower()}{text[1:]}."


def _not_an_object() -> Problem:
    return Problem(400, "invalid_json", detail="The body must be a JSON object.")


def decode(raw: bytes, kind: type[T], codes: Codes) -> T:
    """``raw`` as a ``kind``: 400 ``invalid_json`` if it is not JSON (or not an object,
    or a string in it is no Unicode text), else the ``codes`` problem naming the first
    field that breaks the schema.

    The fast path is one strict pass in msgspec. Two things send a body down a slower
    one: an escaped surrogate (``\\udXXX``), which must pair into one character or
    the body is refused; and a number like ``2.0`` where an integer goes, which JSON
    Schema counts as the integer 2 (so the document allows it) while msgspec's strict
    mode does not: it is read again with integral numbers as integers."""
    if _SURROGATE.search(raw):
        _refuse_lone_surrogates(raw)
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.ValidationError as error:
        if not _INTEGRAL.match(str(error)):
            raise codes.refuse(error) from None
    except msgspec.DecodeError:
        raise _not_an_object() from None
    return convert(_integral(msgspec.json.decode(raw)), kind, codes)


_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_INTEGRAL = re.compile(r"Expected `int`(?: [<>]=? -?\d+)?, got `float`")
_EXACT = 2**53  # floats beyond it are not exact integers


def _refuse_lone_surrogates(raw: bytes) -> None:
    """400 ``invalid_json`` if an escaped surrogate does not pair: the text it decodes to
    is no Unicode, and no database or log could store it."""
    try:
        json.loads(raw, object_hook=_check_keys)
    except UnicodeEncodeError:
        raise Problem(400, "invalid_json", detail="A string in the body is not Unicode "
                      "text: an escaped surrogate (\\udXXX) without its pair.") from None
    except (ValueError, RecursionError):
        raise _not_an_object() from None


def _check_keys(obj: dict[str, Any]) -> dict[str, Any]:
    for key, value in obj.items():
        for text in (key, *(v for v in _strings(value))):
            text.encode()  # UnicodeEncodeError (a ValueError) on a lone surrogate
    return obj


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _integral(value: Any) -> Any:
    """``value`` with every float that is an exact integer as an int."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= _EXACT:
        return int(value)
    if isinstance(value, list):
        return [_integral(v) for v in value]
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    return value


def convert(data: Mapping[str, Any], kind: type[T], codes: Codes) -> T:
    """``data`` (already parsed JSON) as a ``kind``, refused as ``decode`` refuses."""
    try:
        return msgspec.convert(data, kind)
    except msgspec.ValidationError as error:
        raise codes.refuse(error) from None


async def read_body(request: Request, kind: type[T], codes: Codes, *,
                    optional: bool = False) -> T:
    """The request's body as a ``kind``: 415 ``unsupported_media_type`` unless the
    Content-Type is JSON (a form or ``text/plain`` a foreign page could send without a
    CORS preflight never gets parsed), 413 past ``MAX_BODY``, then ``decode``.
    ``optional``: an empty body, whatever its type, is ``kind()`` (every field's default)."""
    raw = await request.body()
    if optional and not raw:
        return decode(b"{}", kind, codes)
    if not is_json_media_type(request.headers.get("content-type")):
        raise Problem(415, "unsupported_media_type",
                      detail="Send the body as JSON with Content-Type: application/json.")
    if len(raw) > MAX_BODY:
        raise Problem(413, "invalid_request", detail="The request body is too large.")
    return decode(raw, kind, codes)


def components(kinds: Iterable[Any], extra: Mapping[str, Mapping[str, Any]] | None = None,
               ) -> dict[str, Any]:
    """The OpenAPI components of ``kinds`` (and of every Struct they name), each merged
    with ``extra[name]``: what JSON Schema says that a Struct cannot (``oneOf``)."""
    _, schemas = msgspec.json.schema_components(list(kinds), ref_template=REF)
    for name, schema in schemas.items():
        schema.pop("title", None)
        if schema.get("required") == []:
            del schema["required"]
        schema.update((extra or {}).get(name, {}))
    return schemas
