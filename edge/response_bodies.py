"""The bodies the edge's routes answer with, declared once as Structs: they generate
the OpenAPI components (edge/openapi.py), and the contract test checks every answer
against them. A field without a default is always present."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

Time = Annotated[datetime, Meta(tz=True)]


class QueueStatus(Struct):
    """A place in the queue, and once admitted the admission token."""

    state: Literal["prequeue", "waiting", "paused", "admitted", "elsewhere", "expired"]
    poll_after_seconds: int
    event_id: int | UnsetType = UNSET
    policy: Literal["fifo", "random", "passthrough"] | UnsetType = UNSET
    place: int | UnsetType | None = UNSET
    position: Annotated[int | None, Meta(description=(
        "At most this many ahead (left places are skipped)"))] | UnsetType = UNSET
    eta_seconds: int | UnsetType | None = UNSET
    onsale_at: Time | UnsetType = UNSET
    ticket: Annotated[str | None, Meta(description="Send back as Queue-Ticket")
                      ] | UnsetType = UNSET
    admission_token: Annotated[str, Meta(description=(
        "Send as Admission-Token on sales routes"))] | UnsetType = UNSET


class BeaconChain(Struct):
    """A drand chain as its ``/info`` document describes it."""

    name: str
    hash: Annotated[str, Meta(description="The chain hash, hex")]
    public_key: Annotated[str, Meta(description="The group's BLS key, hex")]
    scheme: Literal["bls-unchained-g1-rfc9380", "pedersen-bls-chained"]
    period: Annotated[int, Meta(ge=1, description="Seconds between rounds")]
    genesis_time: Annotated[int, Meta(description="Unix seconds of round 1")]


class BeaconCommitment(Struct):
    """Published with the seed's hash, before the pre-queue opens."""

    chain: BeaconChain
    round: Annotated[int, Meta(ge=1, description="The first round due after the sale opens")]


class BeaconOutcome(Struct):
    """The round drawn with, as the chain published it; or ``fallback``: the operator
    drew with the seed alone after the round stayed unpublished."""

    round: int | UnsetType = UNSET
    signature: Annotated[str, Meta(description="BLS signature, hex")] | UnsetType = UNSET
    previous_signature: Annotated[str, Meta(description="Chained chains only, hex")
                                  ] | UnsetType = UNSET
    randomness: Annotated[str, Meta(description="sha256(signature), hex")
                          ] | UnsetType = UNSET
    fallback: Annotated[dict[str, str], Meta(description="reason, at")] | UnsetType = UNSET


class DrawBeacon(Struct):
    """The public randomness beacon of a draw (docs/edge.md#a-draw-nobody-can-predict)."""

    commitment: BeaconCommitment
    closed_at: Annotated[Time | None, Meta(description="When the pre-queue closed")]
    outcome: Annotated[BeaconOutcome | None, Meta(description="None until the draw")]


class QueueDraw(Struct):
    """One page of the random draw's document (docs/edge.md#the-random-draw)."""

    event_id: int | UnsetType = UNSET
    commitment: str | UnsetType | None = UNSET
    seed: str | UnsetType | None = UNSET
    drawn_at: Time | UnsetType | None = UNSET
    participant_count: int | UnsetType | None = UNSET
    page: int | UnsetType = UNSET
    per_page: int | UnsetType = UNSET
    pages: int | UnsetType | None = UNSET
    next: str | UnsetType | None = UNSET
    participants: Annotated[list[str] | None, Meta(description=(
        "This page's slice of the sorted participant ids"))] | UnsetType = UNSET
    beacon: Annotated[DrawBeacon | None, Meta(description=(
        "None: the draw is by the operator's seed alone"))] | UnsetType = UNSET
    method: str | UnsetType = UNSET


class QueueOps(Struct):
    """The waiting room as its operator sees it."""

    event_id: int | UnsetType = UNSET
    settings: dict[str, Any] | UnsetType = UNSET
    live: Annotated[dict[str, Any], Meta(description=(
        "queued, active, admitted_per_minute, abandoned, eta_seconds_for_last, ..."))
    ] | UnsetType = UNSET
    controller: Annotated[dict[str, Any], Meta(description=(
        "state, rate_per_minute, reasons"))] | UnsetType = UNSET


class OpsDashboard(Struct):
    """The console's live figures."""

    event_id: int | UnsetType = UNSET
    at: Time | UnsetType = UNSET
    queue: Annotated[dict[str, Any], Meta(description=(
        "As GET /api/ops/events/{id}/queue"))] | UnsetType = UNSET
    health: Annotated[dict[str, Any], Meta(description=(
        "redis_ok, core_ok, fresh_reports, hold_p99_ms, lock_wait_p99_ms, conflict_rate, "
        "payment_error_rate, completion_rate (null: no traffic)"))] | UnsetType = UNSET
    payments: Annotated[dict[str, Any], Meta(description=(
        "unknown, pending, requires_action, oldest_unknown_seconds"))] | UnsetType = UNSET
    cdc: Annotated[dict[str, Any], Meta(description=(
        "slot, present, active, wal_status, lag_bytes, consumer_alive"))
    ] | UnsetType = UNSET


class AuditCheck(Struct):
    name: str | UnsetType = UNSET
    ok: bool | UnsetType = UNSET
    violations: int | UnsetType = UNSET
    sample: list[dict[str, Any]] | UnsetType = UNSET


class OpsAudit(Struct):
    """The invariant checks of onsale audit."""

    ok: bool | UnsetType = UNSET
    violations: int | UnsetType = UNSET
    checks: list[AuditCheck] | UnsetType = UNSET
    checked_at: Time | UnsetType = UNSET
    duration_ms: float | UnsetType = UNSET
    age_seconds: float | UnsetType = UNSET
    cached_for_seconds: float | UnsetType = UNSET


class FairnessFile(Struct):
    """One file of a lab run, as ``onsale fairness sweep`` writes it."""

    media_type: Literal["text/csv", "application/json", "image/png"]
    encoding: Annotated[Literal["utf-8", "base64"], Meta(description=(
        "utf-8: content is the file's text; base64: its bytes (the charts)"))]
    content: str


class FairnessResult(Struct):
    """The lab's comparison of fifo and a random draw."""

    scenario: dict[str, Any] | UnsetType = UNSET
    duration_ms: float | UnsetType = UNSET
    event_id: int | UnsetType | None = UNSET
    policies: Annotated[dict[str, Any], Meta(description=(
        "fifo and random: totals, humans, bots, cohorts (wait percentiles after the "
        "opening, seat share), wait_histogram, admissions"))] | UnsetType = UNSET
    files: Annotated[dict[str, FairnessFile], Meta(description=(
        "The files of the run by name: summary.csv, cohorts.csv, results.json, "
        "waits.png, bots.png (docs/fairness.md)"))] | UnsetType = UNSET


RESPONSE_BODIES = (QueueStatus, QueueDraw, DrawBeacon, QueueOps, OpsDashboard, OpsAudit,
                   FairnessResult)
