"""Which provider answers (the simulator must never be trusted by accident), and how to
read a search answer. The calls themselves go through the stripe SDK
(``core/stripe_provider.py``)."""

from __future__ import annotations

import logging
from typing import Any

import httpx

from onsale.core.payment_rules import ProviderAnswer
from onsale.kernel.config import ConfigError, Settings

log = logging.getLogger("onsale.payments")

# The payment simulator (psp/) marks every response and webhook with this header;
# a real provider never does (docs/security.md#the-payment-simulator-never-takes-real-money).
SIMULATOR_HEADER = "onsale-simulator"
SIMULATOR_REFUSED = ("the payment provider is the onsale simulator; set "
                     "ONSALE_ALLOW_SIMULATOR=true only where no real money is meant to move")


def provider_identity(base_url: str, timeout: float = 3.0) -> str:
    """``simulator``, ``provider`` (it answered, without the mark) or ``unreachable``:
    one GET of the API root, checked at startup by ``onsale serve``."""
    try:
        response = httpx.get(f"{base_url}/", timeout=timeout)
    except httpx.HTTPError:
        return "unreachable"
    return "simulator" if SIMULATOR_HEADER in response.headers else "provider"


def check_provider(settings: Settings, *, timeout: float = 3.0) -> str | None:
    """Refuse to start (``ConfigError``) against the simulator unless
    ONSALE_ALLOW_SIMULATOR is set. An unreachable provider does not stop startup
    (it may be down for a while; sales can still hold seats): the warning is
    returned, and every answer is checked again (``PspClient``)."""
    if not settings.payments_configured or settings.allow_simulator:
        return None
    base = settings.stripe_api_base
    identity = provider_identity(base, timeout)
    if identity == "simulator":
        raise ConfigError(f"{SIMULATOR_REFUSED} (ONSALE_STRIPE_API_BASE={base})")
    if identity == "unreachable":
        return (f"the payment provider at {base} did not answer; starting "
                "anyway, and an answer from the onsale simulator will not be trusted")
    return None


def search_hit(answer: ProviderAnswer) -> tuple[bool, dict[str, Any] | None]:
    """(answered, the intent found or None). Not answered means: look again later."""
    if answer.status_code != 200 or answer.body is None:
        return False, None
    data = answer.body.get("data")
    if not isinstance(data, list):
        return False, None
    intents = [d for d in data if isinstance(d, dict)]
    return True, (intents[0] if intents else None)
