"""The bodies core's routes answer with, declared once as Structs: they generate the
OpenAPI components (core/openapi.py), and the contract test (schemathesis, every
operation against a live stack) checks every answer against them. A field without a
default is always present; ``UNSET`` ones only sometimes (``ga`` on a GA hold)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from onsale.core.hold_state import HoldState
from onsale.core.order_state import OrderState
from onsale.core.payment_state import PaymentStatus

Uuid = Annotated[str, Meta(extra_json_schema={"format": "uuid"})]
Time = Annotated[datetime, Meta(tz=True)]
Policy = Literal["fifo", "random", "passthrough"]
HoldStatus = Annotated[str, Meta(extra_json_schema={"enum": [s.value for s in HoldState]})]
OrderStatus = Annotated[str, Meta(extra_json_schema={"enum": [s.value for s in OrderState]})]
PaymentState = Annotated[str, Meta(extra_json_schema={
    "enum": [s.value for s in PaymentStatus]})]


class Account(Struct):
    account_id: Uuid
    email: str
    created_at: Time


class BeaconSummary(Struct):
    """The public randomness beacon round the draw mixes into the seed, committed with
    it (docs/edge.md#a-draw-nobody-can-predict)."""

    chain: Annotated[str, Meta(description="The drand chain's name")]
    chain_hash: Annotated[str, Meta(description="The chain's hash, hex")]
    round: Annotated[int, Meta(ge=1, description="The committed round")]
    due_at: Annotated[Time, Meta(description="When the chain publishes the round")]
    state: Annotated[Literal["waiting", "drawn", "fallback"], Meta(
        description="drawn: mixed into the seed; waiting: the draw waits for it; "
                    "fallback: the operator drew with the seed alone")]
    drawn_round: Annotated[int | None, Meta(
        description="The round drawn with (later than the committed one only when the "
                    "pre-queue closed after it was due)")]
    fallback_reason: Annotated[str | None, Meta(description="The operator's reason")]


class Draw(Struct):
    """The random draw's commitment, then its revealed seed (docs/edge.md)."""

    commitment: Annotated[str, Meta(description="sha256(seed), hex")]
    seed: Annotated[str | None, Meta(description="Revealed by the draw")]
    drawn_at: Time | None
    verify: Annotated[str, Meta(description="The draw document's URL")]
    beacon: Annotated[BeaconSummary | None, Meta(
        description="None: the draw is by the operator's seed alone")]


class QueuePolicy(Struct):
    """The published waiting-room policy."""

    policy: Policy
    prequeue_at: Time | None
    pow_difficulty: int
    draw: Draw | None


class EventLinks(Struct):
    venue: Annotated[str, Meta(description=(
        "The layout's immutable, content-addressed URL: "
        "/api/events/{event_id}/venue/{layout_hash}"))]
    holds: str
    queue: str


class GATierInfo(Struct):
    """A GA tier as shoppers see it."""

    tier_id: int | UnsetType = UNSET
    name: str | UnsetType = UNSET
    price_minor: int | UnsetType = UNSET
    capacity: int | UnsetType = UNSET
    max_per_hold: int | UnsetType = UNSET
    max_per_account: int | UnsetType | None = UNSET
    available: Annotated[int, Meta(description="Places left now (all stripes)")
                         ] | UnsetType = UNSET


class Event(Struct):
    event_id: int
    name: str
    venue_name: str
    time_zone: Annotated[str, Meta(description=(
        "The venue's IANA time zone (every time here is UTC)"))]
    starts_at: Time
    onsale_at: Time
    currency: str
    seat_count: int
    hold_ttl_seconds: int
    max_tickets_per_account: int
    max_seats_per_hold: int
    price_tiers: list[dict[str, Any]]
    ga_tiers: list[GATierInfo]
    queue: QueuePolicy
    links: EventLinks


class OperatorEvent(Event):
    """An event as its operator sees it: and the shard it lives on."""

    shard: Annotated[int, Meta(description="The shard the event lives on")]
    moved_from: Annotated[int, Meta(description=(
        "A move's answer: the shard it left (the same as shard: it was there already)"))
    ] | UnsetType = UNSET
    rows_copied: Annotated[dict[str, int], Meta(description=(
        "A move's answer: the rows copied, per table"))] | UnsetType = UNSET


class EventList(Struct):
    events: list[Event]


class Venue(Struct):
    event_id: int
    seat_count: int
    tiers: list[Any]
    columns: list[Any]
    seats: Annotated[dict[str, Any], Meta(description="Columnar arrays keyed by column name")]


class Seat(Struct):
    seat_id: int | UnsetType = UNSET
    section: str | UnsetType = UNSET
    row: str | UnsetType = UNSET
    number: int | UnsetType = UNSET
    tier: str | UnsetType = UNSET
    price_minor: int | UnsetType = UNSET


class GALine(Struct):
    """A GA hold's line (absent for seats)."""

    tier_id: int | UnsetType = UNSET
    name: str | UnsetType = UNSET
    quantity: int | UnsetType = UNSET
    price_minor: Annotated[int, Meta(description="Per place")] | UnsetType = UNSET


class Hold(Struct):
    hold_id: Uuid
    event_id: int
    status: HoldStatus
    expires_at: Time
    seats: list[Seat]
    amount_minor: int
    currency: str
    ga: GALine | UnsetType = UNSET


class Ticket(Struct):
    ticket_id: str | UnsetType = UNSET
    seat_id: int | UnsetType | None = UNSET
    ga_tier_id: int | UnsetType | None = UNSET
    place: int | UnsetType | None = UNSET
    code: str | UnsetType = UNSET
    issued_at: Time | UnsetType = UNSET
    value: Annotated[str, Meta(description=(
        "The signed value a gate verifies offline, shown as a QR code: "
        "OT1.<payload>.<Ed25519 signature> (docs/tickets.md)"))] | UnsetType = UNSET


class TicketKey(Struct):
    kid: str
    alg: Literal["Ed25519"]
    kty: Literal["OKP"]
    crv: Literal["Ed25519"]
    x: Annotated[str, Meta(description="The raw 32-byte public key, base64url")]
    valid_until: Time


class TicketKeys(Struct):
    event_id: int
    valid_until: Annotated[Time, Meta(description="When the event ends: its tickets are "
                                      "valid until then")]
    signing_kid: str
    keys: list[TicketKey]


class RevokedTicket(Struct):
    ticket_id: Uuid
    reason: Annotated[str, Meta(description="cancelled, failed, a payment status such as "
                                "refunded, or released (the seat was taken back)")]
    revoked_at: Time


class TicketRevocations(Struct):
    event_id: int
    as_of: Annotated[Time, Meta(description="Pass as ?since= to get only later changes")]
    revoked: list[RevokedTicket]
    since: Time | UnsetType = UNSET


class Order(Struct):
    order_id: Uuid
    hold_id: Uuid
    event_id: int
    order_status: OrderStatus
    payment_status: PaymentState
    next_action: dict[str, Any] | None
    amount_minor: int
    currency: str
    seats: list[Seat]
    tickets: list[Ticket]
    cancel_reason: str | None
    hold_expires_at: Time
    payment_deadline: Time | None
    created_at: Time
    updated_at: Time
    ga: GALine | UnsetType = UNSET


class OrderSummary(Struct):
    """One of your orders as your list of them shows it."""

    order_id: Uuid
    event_id: int
    event_name: str
    venue_name: str
    event_time_zone: Annotated[str, Meta(description="The venue's IANA time zone")]
    event_starts_at: Time
    order_status: OrderStatus
    payment_status: PaymentState
    in_progress: Annotated[bool, Meta(description=(
        "Still converging: the payment not settled, or paid and the tickets not issued "
        "yet; read it again in a few seconds"))]
    amount_minor: int
    currency: str
    seats: list[Seat]
    ticket_count: int
    created_at: Time
    updated_at: Time
    ga: GALine | UnsetType = UNSET


class OrderList(Struct):
    """A page of your orders, newest first."""

    orders: list[OrderSummary]
    next_cursor: Annotated[str | None, Meta(description=(
        "The next page's before (null: this is the last page)"))]
    next: Annotated[str | None, Meta(description="The next page's URL (null: none)")]
    complete: Annotated[bool, Meta(description=(
        "false: a database did not answer, so orders of some events are missing from "
        "this page; read it again in a moment"))]


class StripeCount(Struct):
    stripe: int | UnsetType = UNSET
    active: bool | UnsetType = UNSET
    available: int | UnsetType = UNSET
    held: int | UnsetType = UNSET
    sold: int | UnsetType = UNSET
    version: int | UnsetType = UNSET


class GATier(GATierInfo):
    """A GA tier as its operator sees it: every stripe's counts."""

    stripes: int | UnsetType = UNSET
    held: int | UnsetType = UNSET
    sold: int | UnsetType = UNSET
    stripe_counts: list[StripeCount] | UnsetType = UNSET
    recent_rebalances: list[dict[str, Any]] | UnsetType = UNSET


class GAReport(Struct):
    event_id: int
    at: Time
    ga_tiers: list[GATier]


class GARebalance(Struct):
    moved: int
    tier: GATier


RESPONSE_BODIES = (Account, Event, OperatorEvent, EventList, Venue, Hold, Order, OrderList,
                   GAReport,
                   GATier, GARebalance, TicketKeys, TicketRevocations)
