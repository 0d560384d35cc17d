"""The cross-site verdict, the public origins and the page policy (kernel/origins.py),
and the cookie policy (kernel/cookies.py): pure functions on literal inputs."""

from __future__ import annotations

import pytest

from onsale.kernel.cookies import cookie_policy
from onsale.kernel.origins import (
    is_cross_site,
    is_loopback_host,
    origin_of,
    page_policy,
    parse_origin,
    public_origins,
    websocket_origins,
)

SHOP = frozenset({"https://shop.example"})


@pytest.mark.parametrize(("method", "origin", "fetch_site", "foreign"), [
    # Safe methods are never judged, whoever asks.
    ("GET", "https://evil.example", "cross-site", False),
    ("HEAD", "null", None, False),
    ("OPTIONS", "https://evil.example", None, False),
    # Origin decides when present.
    ("POST", "https://shop.example", None, False),
    ("POST", "https://shop.example", "cross-site", False),  # Origin wins
    ("POST", "HTTPS://SHOP.EXAMPLE", None, False),
    ("POST", "https://evil.example", None, True),
    ("POST", "https://evil.example", "same-origin", True),
    ("PUT", "https://shop.example.evil.example", None, True),
    ("PATCH", "http://shop.example", None, True),  # another scheme is another origin
    ("DELETE", "https://shop.example:8443", None, True),  # and another port
    ("POST", "https://sub.shop.example", None, True),  # a sibling is foreign too
    ("POST", "null", None, True),
    ("POST", "", None, True),
    # No Origin: Sec-Fetch-Site.
    ("POST", None, "cross-site", True),
    ("POST", None, "same-site", True),
    ("DELETE", None, "Cross-Site", True),
    ("POST", None, "same-origin", False),
    ("POST", None, "none", False),
    ("POST", None, "bogus", True),
    # Neither: not a browser page (an API client, a webhook): credentials decide.
    ("POST", None, None, False),
    ("DELETE", None, None, False),
])
def test_is_cross_site(method: str, origin: str | None, fetch_site: str | None,
                       foreign: bool) -> None:
    assert is_cross_site(method, origin, fetch_site, SHOP) is foreign


@pytest.mark.parametrize(("url", "origin"), [
    ("https://shop.example", "https://shop.example"),
    ("https://Shop.Example:443/path?q=1", "https://shop.example"),
    ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
    ("http://shop.example:80", "http://shop.example"),
    ("https://shop.example:80", "https://shop.example:80"),
    ("http://[::1]:8000", "http://[::1]:8000"),
    ("ftp://shop.example", None), ("shop.example", None), ("https://", None),
    ("https://shop.example:99999", None), ("null", None),
])
def test_origin_of(url: str, origin: str | None) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize(("value", "origin"), [
    ("https://shop.example", "https://shop.example"),
    (" https://shop.example/ ", "https://shop.example"),
    ("https://shop.example/path", None), ("https://shop.example?x=1", None),
    ("https://user@shop.example", None), ("*", None), ("null", None),
])
def test_parse_origin(value: str, origin: str | None) -> None:
    assert parse_origin(value) == origin


def test_public_origins() -> None:
    assert public_origins("https://shop.example/") == {"https://shop.example"}
    assert public_origins("https://shop.example", ["https://www.shop.example"]) == {
        "https://shop.example", "https://www.shop.example"}
    # Loopback: the other spellings of this machine at the same scheme and port.
    assert public_origins("http://127.0.0.1:8000") == {
        "http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"}
    assert public_origins("http://localhost") == {
        "http://127.0.0.1", "http://localhost", "http://[::1]"}


def test_page_policy_has_no_inline_script_and_names_the_socket() -> None:
    csp = page_policy(public_origins("https://shop.example"))
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["connect-src"] == "'self' wss://shop.example"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["base-uri"] == "'none'" and directives["form-action"] == "'self'"
    assert "unsafe" not in csp
    # CSP has no IPv6 literal syntax: 'self' covers [::1].
    assert websocket_origins(["http://[::1]:8000", "http://localhost:8000"]) == [
        "ws://localhost:8000"]


@pytest.mark.parametrize(("url", "secure", "prefix"), [
    ("http://127.0.0.1:8000", False, ""),
    ("http://127.5.6.7", False, ""),
    ("http://localhost:8000", False, ""),
    ("http://app.localhost:8000", False, ""),
    ("http://[::1]:8000", False, ""),
    ("https://127.0.0.1:8443", True, "__Host-"),
    ("https://shop.example", True, "__Host-"),
    ("http://shop.example", True, "__Host-"),  # a public host over http: Secure anyway
    ("http://10.0.0.5:8000", True, "__Host-"),
    ("http://localhost.evil.example", True, "__Host-"),
])
def test_cookie_policy(url: str, secure: bool, prefix: str) -> None:
    policy = cookie_policy(url)
    assert (policy.secure, policy.prefix) == (secure, prefix)
    assert policy.name("onsale_queue_7") == f"{prefix}onsale_queue_7"


def test_cookie_policy_override() -> None:
    assert cookie_policy("http://127.0.0.1:8000", True).prefix == "__Host-"
    assert cookie_policy("https://shop.example", False).secure is False
    assert is_loopback_host("[::1]") and not is_loopback_host(None)
