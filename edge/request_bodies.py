"""The request bodies the edge's routes read, declared once: each Struct validates the
body (``onsale.kernel.bodies.read_body``) and is the OpenAPI component of the same name."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from onsale.core.request_bodies import NAME_PATTERN, QUEUE_SETTINGS_CODES, QueueSettings
from onsale.edge.fairness import MAX_HORIZON, MAX_SECONDS, MAX_VISITORS
from onsale.edge.pow import MAX_SOLUTION
from onsale.edge.risk import MAX_SCORE
from onsale.kernel.bodies import Codes

MAX_CHALLENGE = 512
FALLBACK_PATTERN = NAME_PATTERN  # words: no control characters, not only spaces


class Proof(Struct):
    """A solved proof-of-work challenge (docs/edge.md#proof-of-work)."""

    challenge: Annotated[str, Meta(min_length=1, max_length=MAX_CHALLENGE,
                                   description="The challenge from the pow_required answer")]
    solution: Annotated[str, Meta(min_length=1, max_length=MAX_SOLUTION)]


class QueueJoin(Struct):
    """The join's body: empty, or the proof of work when the answer was pow_required."""

    pow: Proof | UnsetType = UNSET


JOIN_CODES = Codes("invalid_request")

RiskScore = Annotated[int, Meta(ge=1, le=MAX_SCORE)]


class RiskThresholds(Struct, forbid_unknown_fields=True):
    """The score (1..100) at which each band of the built-in bot-risk scorer starts,
    ascending (docs/edge.md#the-built-in-risk-scorer); null or left out: that band is off."""

    raised: Annotated[RiskScore | None, Meta(description=(
        "More proof of work from here"))] = None
    high: Annotated[RiskScore | None, Meta(description=(
        "Much more proof of work from here"))] = None
    refused: Annotated[RiskScore | None, Meta(description=(
        "The join is refused (403 risk_refused) from here"))] = None


class QueueUpdate(QueueSettings, forbid_unknown_fields=True, kw_only=True):
    """The waiting room's settings as an operator changes them: QueueSettings' fields
    and the event's bot-risk thresholds (a field left out keeps its value)."""

    risk: RiskThresholds | UnsetType = UNSET


class FairnessSettings(Struct, forbid_unknown_fields=True):
    """The settings of a fairness-lab run that do not describe the crowd."""

    seats: Annotated[int, Meta(ge=1, le=10_000_000)] | UnsetType = UNSET
    tickets_per_account: Annotated[int, Meta(ge=1, le=100)] | UnsetType = UNSET
    tickets_per_human: Annotated[int, Meta(ge=1, le=100)] | UnsetType = UNSET
    bot_share: Annotated[float, Meta(ge=0, le=1)] | UnsetType = UNSET
    bot_devices: Annotated[int, Meta(ge=1, le=50)] | UnsetType = UNSET
    dedupe_accounts: Annotated[bool, Meta(description=(
        "One place per account (onsale's rule): a bot's devices share one place"))
    ] | UnsetType = UNSET
    rate_min: Annotated[float, Meta(ge=1, le=1_000_000)] | UnsetType = UNSET
    rate_max: Annotated[float, Meta(ge=1, le=1_000_000)] | UnsetType = UNSET
    active_cap: Annotated[int, Meta(ge=1, le=10_000_000)] | UnsetType = UNSET
    session_seconds: Annotated[int, Meta(ge=1, le=86_400)] | UnsetType = UNSET
    horizon_seconds: Annotated[int, Meta(ge=60, le=MAX_HORIZON)] | UnsetType = UNSET
    cohort_seconds: Annotated[int, Meta(ge=1, le=MAX_SECONDS)] | UnsetType = UNSET
    seed: Annotated[int, Meta(ge=0, le=2**63 - 1)] | UnsetType = UNSET


_EVENT = ("Take seats, ticket limit, rates, cap and session length from this event")


class FairnessScenario(FairnessSettings, forbid_unknown_fields=True):
    """A fairness-lab scenario (docs/fairness.md); what it leaves out comes from the event
    named by ``event_id``, else the lab's defaults. The lab checks the merged scenario
    again (edge/fairness.py), since an event's settings fill it too."""

    event_id: Annotated[int, Meta(ge=1, le=2**63 - 1, description=_EVENT)] | None = None
    arrivals: Annotated[list[Annotated[int, Meta(ge=0)]], Meta(
        min_length=1, max_length=MAX_SECONDS,
        description="People arriving in each second (second 0: the queue opens); or a preset"
    )] | UnsetType = UNSET
    preset: Literal["flat", "spike", "early", "decay"] | UnsetType = UNSET
    visitors: Annotated[int, Meta(ge=1, le=MAX_VISITORS)] | UnsetType = UNSET
    seconds: Annotated[int, Meta(ge=1, le=MAX_SECONDS)] | UnsetType = UNSET
    onsale_second: Annotated[int, Meta(ge=0, le=MAX_SECONDS)] | UnsetType = UNSET


class FairnessUpload(FairnessSettings, forbid_unknown_fields=True):
    """The query parameters of a lab run on an uploaded arrivals CSV (the body, as
    ``onsale fairness sweep --arrivals`` reads it): the settings, the event to take
    the others from, and when the sale opened on the CSV's clock."""

    event_id: Annotated[int, Meta(ge=1, le=2**63 - 1, description=_EVENT)] | UnsetType = UNSET
    opens_at: Annotated[str, Meta(min_length=1, max_length=64, description=(
        "When the sale opened: ISO 8601 with a time zone, or Unix seconds; arrivals "
        "before it are the pre-queue (default: the first join)"))] | UnsetType = UNSET


FAIRNESS_CODES = Codes("invalid_request")


class DrawFallback(Struct, forbid_unknown_fields=True):
    """The operator's decision to draw with the seed alone (docs/edge.md#when-the-beacon-
    does-not-answer): shown to every shopper with the draw."""

    reason: Annotated[str, Meta(min_length=1, max_length=500, pattern=FALLBACK_PATTERN,
                                description="Why, in words shoppers will read")]


DRAW_FALLBACK_CODES = Codes("invalid_request")

BODY_CODES = {"QueueJoin": JOIN_CODES, "FairnessScenario": FAIRNESS_CODES,
              "DrawFallback": DRAW_FALLBACK_CODES, "QueueUpdate": QUEUE_SETTINGS_CODES}
