"""The simulator against the official Stripe SDK (stripe-python 16.x): the SDK is the
client. Each test shows the simulator accepts what the SDK sends (form bodies with
bracket notation, Bearer keys, Idempotency-Key) and that the SDK parses what it
answers (objects, errors as stripe.CardError & co., search results, and webhooks
through stripe.Webhook.construct_event). A real simulator on a socket, a real
webhook receiver on another."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import stripe

from onsale.psp.app import build_psp_app
from onsale.psp.config import PspConfig
from onsale.psp.testing import Receiver, ThreadedServer, eventually, reserve_socket, url_of

SECRET_KEY = "sk_test_sim_0123456789abcdef"
PUBLISHABLE_KEY = "pk_test_sim_0123456789abcdef"
SIM_KEY = "sim_test_0123456789abcdef"
WHSEC = "whsec_test_0123456789abcdef"
RETURN_URL = "http://shop.test/checkout/return?order=7"


@dataclass
class Sim:
    url: str
    receiver: Receiver

    def client(self, key: str = SECRET_KEY) -> stripe.StripeClient:
        return stripe.StripeClient(key, base_addresses={"api": self.url},
                                   http_client=stripe.HTTPXClient(allow_sync_methods=True),
                                   max_network_retries=0)

    def events(self) -> list[stripe.Event]:
        return [stripe.Webhook.construct_event(d.body, d.headers["stripe-signature"], WHSEC)
                for d in self.receiver.accepted()]


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    receiver = Receiver()
    hook_sock, sock = reserve_socket(), reserve_socket()
    config = PspConfig(secret_key=SECRET_KEY, publishable_key=PUBLISHABLE_KEY, sim_key=SIM_KEY,
                       data_dir=tmp_path, webhook_url=f"{url_of(hook_sock)}/hook",
                       webhook_secret=WHSEC, public_url=url_of(sock),
                       webhook_backoff_base=0.05, webhook_backoff_cap=0.2)
    with ThreadedServer(receiver.app(), hook_sock), \
            ThreadedServer(build_psp_app(config), sock) as url:
        yield Sim(url, receiver)


@pytest.fixture
async def client(sim: Sim) -> AsyncIterator[stripe.StripeClient]:
    yield sim.client()


def _create(payment_method: str = "pm_card_visa", **extra: Any) -> dict[str, Any]:
    return {"amount": 5000, "currency": "usd", "payment_method": payment_method,
            "capture_method": "manual", "confirm": True, "return_url": RETURN_URL,
            "metadata": {"operation_id": str(uuid.uuid4()), "order_id": "7"}, **extra}


async def test_create_and_confirm_authorizes(client: stripe.StripeClient) -> None:
    params = _create(expand=["latest_charge"])
    intent = await client.v1.payment_intents.create_async(params=params)
    assert isinstance(intent, stripe.PaymentIntent)
    assert intent.id.startswith("pi_") and intent.object == "payment_intent"
    assert intent.status == "requires_capture" and intent.capture_method == "manual"
    assert (intent.amount, intent.amount_capturable, intent.amount_received) == (5000, 5000, 0)
    assert intent.currency == "usd" and intent.livemode is False
    assert intent.metadata["operation_id"] == params["metadata"]["operation_id"]
    assert isinstance(intent.payment_method, str) and intent.payment_method.startswith("pm_")
    assert intent.payment_method != "pm_card_visa"  # a fresh PaymentMethod, as Stripe does
    assert intent.next_action is None and intent.last_payment_error is None
    method = await client.v1.payment_methods.retrieve_async(intent.payment_method)
    assert method.card is not None and (method.card.brand, method.card.last4) == ("visa", "4242")


@pytest.mark.parametrize(("method", "code", "decline_code"), [
    ("pm_card_chargeDeclined", "card_declined", "generic_decline"),
    ("pm_card_visa_chargeDeclined", "card_declined", "generic_decline"),
    ("pm_card_visa_chargeDeclinedInsufficientFunds", "card_declined", "insufficient_funds"),
    ("pm_card_chargeDeclinedExpiredCard", "expired_card", "expired_card"),
])
async def test_declines_raise_card_error(client: stripe.StripeClient, method: str, code: str,
                                         decline_code: str) -> None:
    with pytest.raises(stripe.CardError) as caught:
        await client.v1.payment_intents.create_async(params=_create(method))
    error = caught.value
    assert error.http_status == 402 and error.code == code
    assert error.error is not None and error.error.decline_code == decline_code
    assert error.error.type == "card_error"
    intent = error.error.payment_intent
    assert intent is not None and intent.status == "requires_payment_method"
    assert intent.last_payment_error is not None
    assert intent.last_payment_error.decline_code == decline_code
    again = await client.v1.payment_intents.retrieve_async(intent.id)
    assert again.status == "requires_payment_method"


@pytest.mark.parametrize("method", ["pm_card_threeDSecure2Required",
                                    "pm_card_authenticationRequired"])
async def test_three_d_secure_redirects_and_returns(client: stripe.StripeClient,
                                                    method: str) -> None:
    intent = await client.v1.payment_intents.create_async(params=_create(method))
    assert intent.status == "requires_action" and intent.next_action is not None
    assert intent.next_action.type == "redirect_to_url"
    redirect = intent.next_action.redirect_to_url
    assert redirect is not None and redirect.return_url == RETURN_URL
    assert redirect.url is not None
    async with httpx.AsyncClient() as browser:
        page = await browser.get(redirect.url)
        assert page.status_code == 200 and "authentication" in page.text
        answer = await browser.post(redirect.url, data={"result": "succeed"})
    assert answer.status_code == 303
    assert answer.headers["location"] == f"{RETURN_URL}&payment_intent={intent.id}"
    done = await client.v1.payment_intents.retrieve_async(intent.id)
    assert done.status == "requires_capture" and done.amount_capturable == 5000


async def test_capture_and_cancel(client: stripe.StripeClient) -> None:
    first = await client.v1.payment_intents.create_async(params=_create())
    captured = await client.v1.payment_intents.capture_async(
        first.id, params={"amount_to_capture": 4000})
    assert captured.status == "succeeded" and captured.amount_received == 4000
    assert captured.amount_capturable == 0
    second = await client.v1.payment_intents.create_async(params=_create())
    canceled = await client.v1.payment_intents.cancel_async(
        second.id, params={"cancellation_reason": "abandoned"})
    assert canceled.status == "canceled" and canceled.cancellation_reason == "abandoned"
    with pytest.raises(stripe.InvalidRequestError) as caught:
        await client.v1.payment_intents.capture_async(second.id)
    assert caught.value.http_status == 400
    assert caught.value.code == "payment_intent_unexpected_state"


async def test_retrieve_unknown_is_404(client: stripe.StripeClient) -> None:
    with pytest.raises(stripe.InvalidRequestError) as caught:
        await client.v1.payment_intents.retrieve_async("pi_nope")
    assert caught.value.http_status == 404 and caught.value.code == "resource_missing"
    assert caught.value.param == "id"


async def test_search_by_operation_id(client: stripe.StripeClient) -> None:
    params = _create()
    made = await client.v1.payment_intents.create_async(params=params)
    await client.v1.payment_intents.create_async(params=_create())
    operation = params["metadata"]["operation_id"]
    found = await client.v1.payment_intents.search_async(
        params={"query": f"metadata['operation_id']:'{operation}'"})
    assert isinstance(found, stripe.SearchResultObject)
    assert [i.id for i in found.data] == [made.id] and found.has_more is False


async def test_idempotent_replay_and_conflict(client: stripe.StripeClient) -> None:
    key = str(uuid.uuid4())
    params = _create()
    first = await client.v1.payment_intents.create_async(
        params=params, options={"idempotency_key": key})
    again = await client.v1.payment_intents.create_async(
        params=params, options={"idempotency_key": key})
    assert again.id == first.id
    assert again.last_response is not None
    assert again.last_response.headers.get("idempotent-replayed") == "true"
    with pytest.raises(stripe.IdempotencyError) as caught:
        await client.v1.payment_intents.create_async(
            params={**params, "amount": 6000}, options={"idempotency_key": key})
    assert caught.value.http_status == 400
    assert caught.value.error is not None and caught.value.error.type == "idempotency_error"
    # a replayed decline is the same CardError, for the same PaymentIntent
    declined = _create("pm_card_chargeDeclined")
    ids = []
    for _ in range(2):
        with pytest.raises(stripe.CardError) as card:
            await client.v1.payment_intents.create_async(
                params=declined, options={"idempotency_key": "decline-" + key})
        assert card.value.error is not None and card.value.error.payment_intent is not None
        ids.append(card.value.error.payment_intent.id)
    assert ids[0] == ids[1]


async def test_tokenization_with_the_publishable_key(sim: Sim) -> None:
    public = sim.client(PUBLISHABLE_KEY)
    method = await public.v1.payment_methods.create_async(params={
        "type": "card", "card": {"number": "4000002500003155", "exp_month": 12,
                                 "exp_year": 2034, "cvc": "123"}})
    assert method.id.startswith("pm_") and method.object == "payment_method"
    assert method.type == "card" and method.card is not None
    assert (method.card.brand, method.card.last4, method.card.exp_month,
            method.card.exp_year) == ("visa", "3155", 12, 2034)
    assert method.livemode is False
    intent = await sim.client().v1.payment_intents.create_async(params=_create(method.id))
    assert intent.status == "requires_action" and intent.payment_method == method.id
    with pytest.raises(stripe.CardError) as caught:
        await public.v1.payment_methods.create_async(params={
            "type": "card", "card": {"number": "4242424242424241", "exp_month": 12,
                                     "exp_year": 2034, "cvc": "123"}})
    assert caught.value.code == "incorrect_number" and caught.value.param == "card[number]"
    # the publishable key is good for nothing else
    with pytest.raises(stripe.AuthenticationError):
        await public.v1.payment_intents.create_async(params=_create())
    with pytest.raises(stripe.AuthenticationError):
        await public.v1.payment_intents.retrieve_async(intent.id)


async def test_tokenization_as_stripe_js_posts_it(sim: Sim) -> None:
    async with httpx.AsyncClient(base_url=sim.url) as browser:
        r = await browser.post("/v1/payment_methods", data={
            "type": "card", "card[number]": "4242 4242 4242 4242", "card[exp_month]": "12",
            "card[exp_year]": "34", "card[cvc]": "123", "key": PUBLISHABLE_KEY,
            "guid": "g", "muid": "m", "sid": "s"})
    assert r.status_code == 200, r.text
    assert r.json()["card"]["last4"] == "4242" and r.json()["card"]["exp_year"] == 2034


async def test_bad_keys(sim: Sim) -> None:
    for key in ("sk_test_wrong_0123456789", SIM_KEY):
        with pytest.raises(stripe.AuthenticationError) as caught:
            await sim.client(key).v1.payment_intents.retrieve_async("pi_x")
        assert caught.value.http_status == 401


async def test_unknown_parameter(client: stripe.StripeClient) -> None:
    with pytest.raises(stripe.InvalidRequestError) as caught:
        await client.v1.payment_intents.create_async(params=_create(shipping_rate="x"))
    assert caught.value.code == "parameter_unknown" and caught.value.param == "shipping_rate"


async def test_sim_endpoints_take_only_the_sim_key(sim: Sim) -> None:
    async with httpx.AsyncClient(base_url=sim.url) as http:
        for key in (SECRET_KEY, PUBLISHABLE_KEY, "nothing"):
            r = await http.get("/_sim/stats", headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 401
        r = await http.get("/_sim/stats", headers={"Authorization": f"Bearer {SIM_KEY}"})
        assert r.status_code == 200


async def test_sim_faults_reach_the_sdk(sim: Sim, client: stripe.StripeClient) -> None:
    async with httpx.AsyncClient(base_url=sim.url,
                                 headers={"Authorization": f"Bearer {SIM_KEY}"}) as http:
        r = await http.put("/_sim/faults", json={"rules": [
            {"op": "authorize", "fault": "error_500", "count": 1}]})
        assert r.status_code == 200, r.text
    with pytest.raises(stripe.APIError) as caught:
        await client.v1.payment_intents.create_async(params=_create())
    assert caught.value.http_status == 500
    intent = await client.v1.payment_intents.create_async(params=_create())
    assert intent.status == "requires_capture"


async def test_webhooks_verify_with_the_sdk(sim: Sim, client: stripe.StripeClient) -> None:
    sim.receiver.fail_next = 2  # retried until accepted
    key = str(uuid.uuid4())
    intent = await client.v1.payment_intents.create_async(
        params=_create(), options={"idempotency_key": key})
    await client.v1.payment_intents.capture_async(intent.id)
    declined: list[str] = []
    try:
        await client.v1.payment_intents.create_async(params=_create("pm_card_chargeDeclined"))
    except stripe.CardError as exc:
        assert exc.error is not None and exc.error.payment_intent is not None
        declined.append(exc.error.payment_intent.id)

    def kinds() -> set[tuple[str, str]]:
        return {(e.type, e.data.object["id"]) for e in sim.events()}

    want = {("payment_intent.amount_capturable_updated", intent.id),
            ("payment_intent.succeeded", intent.id),
            ("payment_intent.payment_failed", declined[0])}
    await eventually(lambda: want <= kinds())
    events = sim.events()
    assert len(sim.receiver.received) > len(events)  # the failures came first
    first = next(e for e in events if e.type == "payment_intent.amount_capturable_updated")
    assert isinstance(first, stripe.Event) and first.id.startswith("evt_")
    assert first.object == "event" and first.livemode is False and first.api_version
    assert first.request is not None and first.request.idempotency_key == key
    assert first.data.object["object"] == "payment_intent"
    assert first.data.object["status"] == "requires_capture"
    # a forged or re-signed body is refused by the SDK
    delivery = sim.receiver.accepted()[0]
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(delivery.body + b" ", delivery.headers["stripe-signature"],
                                       WHSEC)
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(delivery.body, delivery.headers["stripe-signature"],
                                       "whsec_other")
    assert json.loads(delivery.body)["object"] == "event"


async def test_a_page_on_another_origin_may_tokenize_a_card(sim: Sim) -> None:
    """What the checkout page does in the browser (web/static/js/checkout.js): a CORS
    preflight, then the card form-encoded with the publishable key."""
    import httpx

    async with httpx.AsyncClient(base_url=sim.url) as c:
        preflight = await c.options("/v1/payment_methods", headers={
            "Origin": "http://shop.test", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == "*"
        assert "authorization" in preflight.headers["access-control-allow-headers"]
        made = await c.post("/v1/payment_methods", headers={
            "Origin": "http://shop.test", "Authorization": f"Bearer {PUBLISHABLE_KEY}"},
            data={"type": "card", "card[number]": "4242424242424242",
                  "card[exp_month]": "12", "card[exp_year]": "2034", "card[cvc]": "123"})
        assert made.status_code == 200, made.text
        assert made.headers["access-control-allow-origin"] == "*"
        assert made.json()["id"].startswith("pm_")
        other = await c.options("/v1/payment_intents")  # only tokenization is open to pages
        assert "access-control-allow-origin" not in other.headers
