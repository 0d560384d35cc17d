"""The shopper's 3-D Secure pages (pure HTML, one plain form, no script)."""

from __future__ import annotations

import base64
import hashlib
from html import escape
from urllib.parse import urlencode, urlsplit, urlunsplit

from onsale.psp.intents import PaymentIntent

_STYLE = ("body{font:16px system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}"
          "button{font:inherit;padding:.5rem 1rem;margin:.25rem .5rem .25rem 0}")
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()

# The pages' response headers: no script at all, only the one <style> block
# (by its hash), never framed. No form-action: the answer's redirect goes to
# the merchant's return URL, which a form-action list would have to name.
HEADERS = {
    "Content-Security-Policy": (f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; "
                                "frame-ancestors 'none'; base-uri 'none'"),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def _page(title: str, body: str) -> str:
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
            f"<body><h1>{escape(title)}</h1>{body}</body></html>")


def _amount(intent: PaymentIntent) -> str:
    return f"{intent.amount / 100:.2f} {intent.currency.upper()}"


def challenge(intent: PaymentIntent) -> str:
    """The authentication page for an intent that awaits 3-D Secure."""
    return _page("3-D Secure authentication", (
        f"<p>Payment <code>{escape(intent.id)}</code> of {escape(_amount(intent))} "
        f"with {escape(intent.payment_method)} needs authentication.</p>"
        f"<form method=\"post\" action=\"/3ds/{escape(intent.id)}\">"
        "<button type=\"submit\" name=\"result\" value=\"succeed\">Complete authentication"
        "</button><button type=\"submit\" name=\"result\" value=\"fail\">Fail authentication"
        "</button></form>"))


def done(intent: PaymentIntent) -> str:
    """After the answer (or for an intent that needs none)."""
    link = ""
    if intent.return_url:
        link = f"<p><a href=\"{escape(return_to(intent))}\">Return to the merchant</a></p>"
    return _page("Authentication finished", (
        f"<p>Payment <code>{escape(intent.id)}</code> is now "
        f"<strong>{escape(intent.status)}</strong>.</p>{link}"))


def not_found(intent_id: str) -> str:
    return _page("Payment not found", f"<p>No payment <code>{escape(intent_id)}</code>.</p>")


def bad_answer() -> str:
    return _page("Invalid answer", "<p>The result must be <code>succeed</code> or "
                 "<code>fail</code>.</p>")


def return_to(intent: PaymentIntent) -> str:
    """The return URL with ``payment_intent=<id>`` appended to its query."""
    assert intent.return_url is not None
    parts = urlsplit(intent.return_url)
    extra = urlencode({"payment_intent": intent.id})
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit(parts._replace(query=query))
