"""The request bodies core's routes read, declared once: each Struct validates the body
(``onsale.kernel.bodies.read_body``) and is the OpenAPI component of the same name. The
pure parsers (hold_rules, event_spec, accounts, checkout) take a decoded Struct and check
only what a schema cannot say."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from onsale.kernel.bodies import Codes

# A hard ceiling checked before the database is asked; the event's own
# max_seats_per_hold (default 6) is enforced inside the hold transaction.
HARD_MAX_SEATS = 100
MAX_SEAT_ID = 2**31 - 1
MAX_GA_TIER_ID = 32_767  # smallint
MAX_SEATS = 500_000
MAX_PRICE_MINOR = 99_999_999 // 6
MAX_RATE = 1_000_000
MAX_CAP = 10_000_000
MAX_GA_TIERS = 10
MAX_GA_CAPACITY = 1_000_000
MAX_STRIPES = 64
MAX_SHARD = 32_767

# A name: no control character (PostgreSQL text cannot hold NUL), and something besides
# spaces. The classes are spelt out so that Python's re and ECMA-262 agree.
_CONTROL = "\\x00-\\x1f\\x7f-\\x9f"
_SPACE = (" \\x00-\\x1f\\x7f-\\x9f\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f"
          "\\u205f\\u3000\\ufeff")
NAME_PATTERN = f"^[^{_CONTROL}]*[^{_SPACE}][^{_CONTROL}]*$"
Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=NAME_PATTERN)]
ShortName = Annotated[str, Meta(min_length=1, max_length=50, pattern=NAME_PATTERN)]

# An address like name@example.com: no space or control character anywhere (letters of
# any script are fine). The class lists every character that either Python's or
# JavaScript's \s matches, so the route (Python's re) and a client checking the schema
# (ECMA-262) agree on every string. The schema states this pattern, not the "email"
# format: it is the rule the route enforces.
_NOT_IN_EMAIL = "@" + _SPACE
EMAIL_PATTERN = (f"^[^{_NOT_IN_EMAIL}]{{1,64}}@[^{_NOT_IN_EMAIL}]+"
                 f"\\.[^{_NOT_IN_EMAIL}]{{2,}}$")
MIN_PASSWORD = 8
MAX_PASSWORD = 256
# A PaymentMethod id, and nothing with twelve digits in a row: a card number (PAN)
# dressed as an id is refused too.
PAYMENT_METHOD_PATTERN = r"^(?!.*[0-9]{12})pm_[A-Za-z0-9_]{1,250}$"

Time = Annotated[datetime, Meta(tz=True, description="ISO 8601 with a time zone")]
QueuePolicy = Literal["fifo", "random", "passthrough"]


class Credentials(Struct):
    """An email address and a password (sign-up refuses a password shorter than 8)."""

    email: Annotated[str, Meta(max_length=254, pattern=EMAIL_PATTERN)]
    password: Annotated[str, Meta(min_length=MIN_PASSWORD, max_length=MAX_PASSWORD)]


SIGN_UP_CODES = Codes("invalid_email", password="weak_password")


class SignIn(Struct):
    """An email address and a password. Any strings: what is wrong with them is the
    throttled check's to say (a short guess counts against the throttle too)."""

    email: Annotated[str, Meta(max_length=254)]
    password: Annotated[str, Meta(max_length=4096)]


# Sign-in says nothing about which part was wrong.
SIGN_IN_CODES = Codes("bad_credentials", status=401)


SeatId = Annotated[int, Meta(ge=1, le=MAX_SEAT_ID)]
Quantity = Annotated[int, Meta(ge=1, le=HARD_MAX_SEATS)]


class BestAvailable(Struct):
    """The best seats the event has: ``quantity`` of them, in ``section`` if named,
    side by side in one row if ``together``."""

    quantity: Annotated[Quantity, Meta(description="At most the event's max_seats_per_hold")]
    section: ShortName | None = None
    together: bool = False


class GAPlaces(Struct, forbid_unknown_fields=True):
    """Places of a general-admission tier (docs/general-admission.md)."""

    tier_id: Annotated[int, Meta(ge=1, le=MAX_GA_TIER_ID)]
    quantity: Annotated[Quantity, Meta(description="At most the tier's max_per_hold")]


class HoldRequest(Struct):
    """Exactly one of ``seat_ids``, ``best_available`` or ``ga``."""

    seat_ids: Annotated[list[SeatId], Meta(
        min_length=1, max_length=HARD_MAX_SEATS, extra_json_schema={"uniqueItems": True},
        description="At most the event's max_seats_per_hold (default 6)")] | UnsetType = UNSET
    best_available: BestAvailable | UnsetType = UNSET
    ga: GAPlaces | UnsetType = UNSET


HOLD_REQUEST_EXTRA = {"oneOf": [{"required": [k]} for k in ("seat_ids", "best_available",
                                                            "ga")]}
HOLD_CODES = Codes("invalid_seats", ga="invalid_quantity")


class CheckoutRequest(Struct, forbid_unknown_fields=True):
    """The PaymentMethod the page got by tokenizing the card with the provider."""

    payment_method: Annotated[str, Meta(pattern=PAYMENT_METHOD_PATTERN, description=(
        "A PaymentMethod id (pm_...); a card number is refused"))]


CHECKOUT_CODES = Codes("invalid_request", payment_method=(
    "invalid_payment_method",
    "Card numbers are not accepted here: tokenize the card with the payment provider and "
    "send its PaymentMethod id (pm_…)."))


class PriceTier(Struct):
    name: ShortName
    price_minor: Annotated[int, Meta(ge=1, le=MAX_PRICE_MINOR)]


class GATierRequest(Struct, forbid_unknown_fields=True):
    name: ShortName
    price_minor: Annotated[int, Meta(ge=1, le=MAX_PRICE_MINOR)]
    capacity: Annotated[int, Meta(ge=1, le=MAX_GA_CAPACITY)]
    stripes: Annotated[int, Meta(ge=1, le=MAX_STRIPES)] = 1
    max_per_hold: Annotated[int, Meta(ge=1, le=100, description=(
        "Default: the event's max_seats_per_hold"))] | UnsetType = UNSET
    max_per_account: Annotated[int, Meta(ge=1, le=100, description=(
        "null: the event's max_tickets_per_account"))] | None = None


Rate = Annotated[int, Meta(ge=1, le=MAX_RATE, description="New shoppers per minute")]
Cap = Annotated[int, Meta(ge=1, le=MAX_CAP)]
Difficulty = Annotated[int, Meta(ge=0, le=32)]


class QueueSettings(Struct, forbid_unknown_fields=True):
    """The waiting room's settings; a field left out keeps its value (at creation, the
    default), and so does a null ``prequeue_at``."""

    queue_policy: QueuePolicy | UnsetType = UNSET
    prequeue_at: Time | None = None
    admission_rate_min: Rate | UnsetType = UNSET
    admission_rate_max: Rate | UnsetType = UNSET
    active_cap: Cap | UnsetType = UNSET
    pow_difficulty: Difficulty | UnsetType = UNSET


QUEUE_SETTINGS_CODES = Codes("invalid_request")


class NewEvent(QueueSettings, kw_only=True):
    """An event to create from a generated layout: seats, price tiers, GA tiers and its
    waiting room (the fields of QueueSettings)."""

    name: Name
    seats: Annotated[int, Meta(ge=0, le=MAX_SEATS, description=(
        "Default 50,000; 0 only with ga_tiers"))] | UnsetType = UNSET
    hold_ttl_seconds: Annotated[int, Meta(ge=1, le=3600)] | UnsetType = UNSET
    max_tickets_per_account: Annotated[int, Meta(ge=1, le=100)] | UnsetType = UNSET
    max_seats_per_hold: Annotated[int, Meta(ge=1, le=100)] | UnsetType = UNSET
    onsale_at: Time | None = None
    starts_at: Time | None = None
    venue_name: Name | UnsetType = UNSET
    time_zone: Annotated[str, Meta(min_length=1, max_length=64, description=(
        "The venue's IANA time zone, e.g. Europe/Berlin (default UTC): the pages show "
        "times in it; the API keeps UTC"))] | UnsetType = UNSET
    currency: Annotated[str, Meta(pattern=r"^[A-Za-z]{3}$",
                                  description="ISO 4217")] | UnsetType = UNSET
    price_tiers: Annotated[list[PriceTier], Meta(
        min_length=1, max_length=10, description="null: the default tiers")] | None = None
    ga_tiers: Annotated[list[GATierRequest], Meta(
        min_length=1, max_length=MAX_GA_TIERS,
        description="General-admission tiers (seats may then be 0)")] | None = None
    shard: Annotated[int, Meta(ge=1, le=MAX_SHARD, description=(
        "The shard to place it on (default: the active shard with the fewest events "
        "on sale)"))] | None = None


EVENT_CODES = Codes("invalid_request")


class MoveRequest(Struct):
    """The shard to move the event to."""

    shard: Annotated[int, Meta(ge=1, le=MAX_SHARD)]


class StripesRequest(Struct):
    """How many stripes of the GA tier are active."""

    stripes: Annotated[int, Meta(ge=1, le=MAX_STRIPES)]


OPERATOR_CODES = Codes("invalid_request")

# The codes each body's refusals carry, by its component's name (a test checks that
# every operation reading it documents them).
BODY_CODES = {"Credentials": SIGN_UP_CODES, "SignIn": SIGN_IN_CODES, "HoldRequest": HOLD_CODES,
              "CheckoutRequest": CHECKOUT_CODES, "NewEvent": EVENT_CODES,
              "MoveRequest": OPERATOR_CODES, "StripesRequest": OPERATOR_CODES}

REQUEST_BODIES = (Credentials, SignIn, HoldRequest, CheckoutRequest, NewEvent, MoveRequest,
                  StripesRequest)
