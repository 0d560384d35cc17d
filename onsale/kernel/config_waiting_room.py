"""The waiting room's settings (docs/configuration.md#waiting-room, docs/edge.md)."""

from __future__ import annotations

from dataclasses import dataclass

from onsale.kernel.beacon_chain import ChainError, chain_setting
from onsale.kernel.settings import ConfigError, Section, setting

_PER_MINUTE = "requests per minute, integer ≥ 1"


def admission_keys(name: str, raw: str) -> str:
    for key in (k.strip() for k in raw.split(",")):
        if key and len(key) < 16:
            raise ConfigError(f"every {name} key must be at least 16 characters")
    return raw


def beacon_chain(name: str, raw: str) -> str:
    try:
        chain_setting(raw)
    except ChainError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    return raw.strip()


def beacon_relays(name: str, raw: str) -> str:
    urls = [u.strip() for u in raw.split(",") if u.strip()]
    if not urls or not all(u.startswith(("http://", "https://")) for u in urls):
        raise ConfigError(f"{name} must list http(s) URLs, comma-separated")
    return ",".join(u.rstrip("/") for u in urls)


@dataclass(frozen=True)
class WaitingRoomSettings(Section):
    admission_keys: str = setting(
        "",
        "Signs admission tokens, queue tickets and proof-of-work challenges (HMAC-SHA256). "
        "The **first** key signs, **every** key verifies: rotate by deploying `new,old` "
        "everywhere, then `new` once old tokens and queues are over. Edge and core "
        "processes must have the same list.",
        parse=admission_keys, default_doc="one key derived from `ONSALE_SECRET_KEY`",
        range_doc="comma-separated keys, each at least 16 characters")
    admission_ttl_seconds: int = setting(
        600, "Lifetime of an admission token; a poll renews it past half its life while the "
        "session lasts.", lo=30, hi=86400, unit="s")
    queue_poll_seconds: int = setting(
        5, "The shortest `poll_after_seconds` (near the front). Further back: a tenth of the "
        "ETA, at most a fifth of the grace (60 s).", lo=1, hi=60,
        range_doc="integer 1–60, at most half of `ONSALE_QUEUE_ABANDON_SECONDS`")
    queue_abandon_seconds: int = setting(
        300, "A waiting visitor not polling for this long loses the place (`abandoned`).",
        lo=10, hi=86400, unit="s")
    admission_claim_seconds: int = setting(
        120, "An admitted visitor who does not come back (poll) within this time loses the "
        "admission (`no_show`) and frees its slot under the cap.", lo=10, hi=3600, unit="s")
    shopper_idle_seconds: int = setting(
        600, "An active shopper without a gated request for this long is no longer active: "
        "the session ends (its token gets `admission_expired`) and the slot is free.",
        lo=30, hi=86400, unit="s")
    admitter_interval: float = setting(
        0.25, "The admitter's tick; the event lease lasts 8 ticks (at least 2 s).",
        positive=True, unit="s")
    join_limit_ip: int = setting(
        600, "Joins per client IP, per edge process (bursts of a sixth of a minute, at "
        "least 5); over it `429 rate_limited` with `Retry-After`.",
        lo=1, hi=10**9, range_doc=_PER_MINUTE)
    join_limit_account: int = setting(
        30, "Joins per account, per edge process, limited like `ONSALE_JOIN_LIMIT_IP`.",
        lo=1, hi=10**9, range_doc=_PER_MINUTE)
    poll_limit_ip: int = setting(
        6000, "Polls per client IP, per edge process, limited like joins (in memory: polls "
        "never touch Redis).", lo=1, hi=10**9, range_doc=_PER_MINUTE)
    poll_limit_account: int = setting(
        120, "Polls per account, per edge process.", lo=1, hi=10**9, range_doc=_PER_MINUTE)
    draw_limit_ip: int = setting(
        120, "Reads of the published draw (`GET /api/events/{id}/queue/draw`, `304`s "
        "included) per client address (IPv6: per /64), per edge process (bursts of a sixth "
        "of a minute, at least 5); over it `429 rate_limited` with `Retry-After`. A draw of "
        "2M participants is 200 pages at the default page size.",
        lo=1, hi=10**9, range_doc=_PER_MINUTE)
    draw_page_max: int = setting(
        10_000, "The most participant ids in one page of the draw, and the page size when "
        "`per_page` is not given; a larger `per_page` is `400 invalid_request` "
        "([edge.md](edge.md#serving-the-draw)).", lo=1, hi=100_000)
    draw_cache_mb: int = setting(
        64, "Memory of encoded draw pages kept per edge process (least recently used out "
        "first); a page of 10,000 ids is about 390 KB.", lo=1, hi=65_536, unit="MiB")
    # The admission controller's targets (docs/edge.md#the-adaptive-controller).
    target_hold_p99_ms: float = setting(
        300.0, "The admission controller's hold latency target (edge): above it, the "
        "admission rate halves ([edge.md](edge.md#the-controller)).", positive=True,
        unit="ms")
    target_lock_wait_p99_ms: float = setting(
        100.0, "The controller's lock-wait target: above it, the admission rate halves.",
        positive=True, unit="ms")
    target_conflict_rate: float = setting(
        0.6, "Above this share of hold requests that lose their seats, the admission rate "
        "halves.", positive=True, hi=1, range_doc="fraction in (0, 1]")
    target_payment_error_rate: float = setting(
        0.05, "Above this share of payment errors, the admission rate halves.",
        positive=True, hi=1, range_doc="fraction in (0, 1]")
    target_completion_floor: float = setting(
        0.0, "Below this completion rate (authorizations / holds) the rate stops growing.",
        lo=0, hi=1, default_doc="`0` (off)", range_doc="fraction in [0, 1]")
    target_active_headroom: float = setting(
        0.9, "At this share of the active cap the rate stops growing.", positive=True, hi=1,
        range_doc="fraction in (0, 1]")

    beacon: str = setting(
        "off", "The public randomness beacon a random draw commits to with its seed and "
        "mixes in when the sale opens, so that not even the operator can predict it "
        "([edge.md](edge.md#a-draw-nobody-can-predict)): `quicknet` or `mainnet` (drand's "
        "public chains), a file holding another drand chain's `/info` document, or `off` "
        "(the operator's seed alone).", parse=beacon_chain,
        range_doc="`off`, `quicknet`, `mainnet` or a chain info file")
    beacon_relays: str = setting(
        "https://api.drand.sh,https://drand.cloudflare.com",
        "The drand HTTP relays asked for the committed round, in turn. What they answer "
        "is checked against the chain's public key, so a relay cannot change a draw; it "
        "can only withhold the round.", parse=beacon_relays,
        range_doc="comma-separated http(s) URLs")
    beacon_grace_seconds: int = setting(
        120, "How long after the committed round is due the operator must wait before "
        "drawing with the seed alone (`POST /api/ops/events/{id}/draw/fallback`).",
        lo=10, hi=86400, unit="s")

    def check(self) -> None:
        if self.queue_poll_seconds * 2 > self.queue_abandon_seconds:
            raise ConfigError("ONSALE_QUEUE_POLL_SECONDS must be at most half of "
                              "ONSALE_QUEUE_ABANDON_SECONDS (a polling visitor is never "
                              "dropped)")
