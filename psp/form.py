"""Stripe's request encoding (pure): ``application/x-www-form-urlencoded`` with
bracket notation, into nested dicts and lists.

    metadata[operation_id]=op-1   → {"metadata": {"operation_id": "op-1"}}
    card[number]=4242…            → {"card": {"number": "4242…"}}
    expand[0]=latest_charge       → {"expand": ["latest_charge"]}   (the SDK's form)
    expand[]=latest_charge        → {"expand": ["latest_charge"]}   (Stripe.js, curl)

Every leaf is a string, as on the wire; ``params`` gives them their types. A dict
whose keys are all ``0..n-1`` becomes a list, except ``metadata``'s own keys.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

from onsale.psp import errors

MAX_PAIRS = 1000
MAX_DEPTH = 5
_KEY = re.compile(r"(?P<base>[^\[\]]+)(?P<rest>(?:\[[^\[\]]*\])*)")
_SEGMENT = re.compile(r"\[([^\[\]]*)\]")
_APPEND = object()


def parse(raw: bytes | str) -> dict[str, Any]:
    """The nested parameters of a form body or a query string."""
    text = raw.decode("utf-8", "strict") if isinstance(raw, bytes) else raw
    try:
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=bool(text),
                          max_num_fields=MAX_PAIRS)
    except ValueError:
        raise errors.invalid(None, "The request body is not valid form encoding.") from None
    root: dict[str, Any] = {}
    for key, value in pairs:
        _put(root, key, value)
    result = _lists(root, inside_metadata=False)
    assert isinstance(result, dict)
    return result


def _put(root: dict[str, Any], key: str, value: str) -> None:
    match = _KEY.fullmatch(key)
    if match is None:
        raise errors.invalid(key, f"Invalid parameter name: {key!r}.", "parameter_invalid")
    path: list[Any] = [match["base"]]
    path += [_APPEND if s == "" else s for s in _SEGMENT.findall(match["rest"])]
    if len(path) > MAX_DEPTH:
        raise errors.invalid(key, f"{key} is nested too deeply.")
    node: Any = root
    for index, segment in enumerate(path):
        last = index == len(path) - 1
        if segment is _APPEND:
            if not isinstance(node, dict):
                raise errors.invalid(key, f"Invalid array parameter: {key}.")
            segment = str(sum(1 for k in node if k.isdigit()))
        if not isinstance(node, dict):
            raise errors.invalid(key, f"Conflicting values for {key}.")
        if last:
            if segment in node:
                raise errors.invalid(key, f"{key} is given more than once.")
            node[segment] = value
        else:
            child = node.setdefault(segment, {})
            if not isinstance(child, dict):
                raise errors.invalid(key, f"Conflicting values for {key}.")
            node = child


def _lists(node: Any, *, inside_metadata: bool) -> Any:
    if not isinstance(node, dict):
        return node
    items = {k: _lists(v, inside_metadata=k == "metadata" and not inside_metadata)
             for k, v in node.items()}
    if (not inside_metadata and items
            and sorted(items) == sorted(str(i) for i in range(len(items)))):
        return [items[str(i)] for i in range(len(items))]
    return items
