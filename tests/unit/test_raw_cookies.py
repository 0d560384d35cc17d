"""kernel.cookies.raw_cookies: the queue poll's two cookies read from the raw header
give what Starlette's ``request.cookies`` gives for them."""

from __future__ import annotations

import random

import pytest
from starlette.requests import cookie_parser

from onsale.kernel.cookies import raw_cookies

NAMES = ("onsale_session", "onsale_queue_7")
RAW = (b"onsale_session", b"onsale_queue_7")


@pytest.mark.parametrize("header", [
    "onsale_session=abc.def; onsale_queue_7=t.1",
    "onsale_queue_7=t.1;onsale_session=abc",
    "other=1; onsale_session=\"quoted\\073value\"; x",
    "onsale_session=first; onsale_session=second",  # the last one wins
    " onsale_session = spaced ; onsale_queue_7= t ",
    "onsale_session=a=b=c",  # the value keeps its own '='
    "xonsale_session=no; onsale_session_x=no",  # only exact names
    "onsale_session",  # no '=': a nameless cookie, not this one
    "",
    ";;;",
    "onsale_queue_7=",  # empty value
    "\xa0onsale_session\x1c=\x85v\xa0",  # what str.strip() strips, beyond ASCII
])
def test_the_same_as_starlettes_parser(header: str) -> None:
    parsed = cookie_parser(header)
    assert raw_cookies(header.encode("latin-1"), RAW) == tuple(parsed.get(n) for n in NAMES)


def test_no_header_is_no_cookie() -> None:
    assert raw_cookies(None, RAW) == (None, None)
    assert raw_cookies(b"", RAW) == (None, None)


def test_random_headers_agree_with_starlette() -> None:
    rng = random.Random(5)
    parts = ["onsale_session", "onsale_queue_7", "a", " ", "=", ";", "\"", "\\", "x=y", "é",
             "\xa0", "\x1c", "\t", "\x85"]
    for _ in range(3000):
        header = "".join(rng.choice(parts) for _ in range(rng.randint(0, 12)))
        parsed = cookie_parser(header)
        assert raw_cookies(header.encode("latin-1"), RAW) \
            == tuple(parsed.get(n) for n in NAMES), header
