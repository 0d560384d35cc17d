"""The visitor's routes: join the queue and poll it (the published draw:
``edge/draw_routes.py``).

A poll reads only memory: the signed ticket (the place), the session cookie's
signature, the cached "now serving" figure and the cached event settings.
Redis is touched once when a visitor is admitted (to check its sign-in session
is live, then claim its shopping session), once after a random draw (to learn
the drawn place), and when an admission token needs renewing.
"""

from __future__ import annotations

import functools
import secrets
import time
import uuid
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec
from msgspec import UnsetType
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Scope

from onsale.edge.admission import eta_seconds, poll_after, position
from onsale.edge.caches import EventConfig, Status
from onsale.edge.limits import RateLimiter, retry_after
from onsale.edge.pow import PowVerdict, RiskFacts, Work, required_difficulty
from onsale.edge.queue_store import QUEUE_STORE_DOWN, Spend
from onsale.edge.request_bodies import JOIN_CODES, QueueJoin
from onsale.edge.risk import Band, RiskVerdict, verdict_of
from onsale.edge.runtime import Edge, edge_state
from onsale.edge.tokens import Ticket, Verdict, admission_cookie, ticket_cookie
from onsale.kernel.auth import current_account, signed_account
from onsale.kernel.bodies import read_body
from onsale.kernel.cookies import raw_cookies, settings_cookie_policy
from onsale.kernel.inputs import int_path, parse_id
from onsale.kernel.logs import REQUEST_ID
from onsale.kernel.problems import Problem
from onsale.kernel.responses import JSONResponse, NoStoreJSON
from onsale.kernel.sessions import SessionRef, Sessions
from onsale.kernel.timefmt import utc_iso

TICKET_HEADER = "queue-ticket"
MAX_NAMED_EVENTS = 4096  # events whose cookie names a process keeps (the quick poll)
# The quick poll remembers a visitor (Edge.visitors) only by headers this short (the
# Cookie and Queue-Ticket headers together): 32,768 entries stay under about 40 MiB,
# whatever junk cookies a client adds; a longer header is checked on every poll.
MAX_REMEMBERED_HEADERS = 1024
PAUSED_STATES = ("paused", "unhealthy")


def _limit(limiters: tuple[RateLimiter, ...], keys: tuple[Hashable, ...]) -> None:
    for limiter, key in zip(limiters, keys, strict=True):
        wait = limiter.allow(key)
        if wait > 0:
            raise Problem(429, "rate_limited", retry_after=retry_after(wait))


def client_ip(request: Request) -> str:
    return request.client.host if request.client else "unknown"


async def event_config(edge: Edge, event_id: int) -> EventConfig:
    config = await edge.configs.get(event_id)
    if config is None:
        raise Problem(404, "event_not_found")
    return config


async def _status(edge: Edge, event_id: int) -> Status:
    status = edge.status.get(event_id)
    if status is None:
        try:
            status = await edge.status.load(event_id)
        except Exception as exc:
            raise Problem(503, "queue_unavailable", detail=QUEUE_STORE_DOWN) from exc
    return status


def _now_ms() -> int:
    return int(time.time() * 1000)


class View:
    """The answer to a join or a poll, and the cookies that go with it."""

    def __init__(self, edge: Edge, config: EventConfig, ticket: Ticket,
                 presented: Presented, *, live: bool, work: Work | None = None) -> None:
        self.edge, self.config, self.ticket = edge, config, ticket
        self.presented = presented
        self.live = live  # the session record was checked (a poll reads only the signature)
        self.work = work  # a join's proof of work, spent by the claim that admits it
        self.body: dict[str, Any] = {"event_id": config.event_id, "policy": config.policy}
        self.admission: str | None = None
        self.drop_ticket = False

    def response(self) -> Response:
        settings = self.edge.settings
        presented = self.presented  # a poll's ticket is the very one it presented
        unchanged = presented.token is not None and (presented.ticket is self.ticket
                                                     or presented.ticket == self.ticket)
        if self.drop_ticket:
            self.body["ticket"] = None
        else:  # a poll echoes the ticket it was shown: no signing on the hot path
            self.body["ticket"] = (self.presented.token if unchanged
                                   else self.edge.tickets.issue(self.ticket))
        if unchanged and not self.drop_ticket and self.admission is None:  # no cookie to write
            return NoStoreJSON(self.body)
        response = JSONResponse(self.body, headers={"Cache-Control": "no-store"})
        policy = settings_cookie_policy(settings)
        name = ticket_cookie(self.config.event_id, policy.prefix)
        if self.drop_ticket:
            response.delete_cookie(name, path="/", httponly=True, samesite="lax",
                                   secure=policy.secure)
        elif not unchanged:
            response.set_cookie(name, self.body["ticket"], max_age=7 * 86400, path="/",
                                httponly=True, samesite="lax", secure=policy.secure)
        if self.admission is not None:
            response.set_cookie(admission_cookie(self.config.event_id, policy.prefix),
                                self.admission, max_age=settings.admission_ttl_seconds,
                                path="/", httponly=True, samesite="lax", secure=policy.secure)
        return response

    def waiting(self, state: str, status: Status, place: int | None) -> None:
        edge, config = self.edge, self.config
        ahead = None if place is None else position(place, status.serving)
        rate = status.measured or status.rate or float(config.rate_min)
        eta = None if ahead is None else eta_seconds(ahead, rate)
        if eta is not None and not config.sale_open():
            eta += max(0, int(config.onsale_at - config.now()))
        self.body.update(state=state, position=ahead, eta_seconds=eta,
                         poll_after_seconds=poll_after(eta, edge.settings.queue_poll_seconds,
                                                       edge.longest_poll),
                         onsale_at=utc_iso_ts(config.onsale_at))

    async def admit(self, request: Request, *, steal: bool) -> None:
        """Admitted: the current admission token, renewed or claimed as needed.

        Only for a live session: a poll has read only the cookie's signature
        (``signed_account``), so a poll that reaches this point checks the
        session record first (401 ``authentication_required`` once signed
        out): a copied cookie must not claim the shopping session or carry
        off an admission token."""
        if not self.live:
            await current_account(request)
            self.live = True
        edge, config, ticket = self.edge, self.config, self.ticket
        self.body.update(position=0, eta_seconds=0,
                         poll_after_seconds=edge.settings.queue_poll_seconds)
        token = edge.gate.token(request, config.event_id)
        verdict, held = edge.admissions.check(token, config.event_id, ticket.account_id)
        if (not steal and verdict is Verdict.VALID and held is not None
                and edge.admissions.remaining(held) > edge.settings.admission_ttl_seconds / 2
                and await _current(edge, config.event_id, ticket.account_id,
                                   held.session_id) == held.session_id):
            self.body.update(state="admitted", admission_token=token)
            return
        # Passthrough admits on the spot, unless an operator paused the event
        # (then only existing sessions resume).
        open_door = config.policy == "passthrough" and not config.paused
        try:
            claimed = await edge.store.claim(
                config.event_id, ticket.account_id, ticket.device, _now_ms(),
                edge.settings.shopper_idle_seconds * 1000, passthrough=open_door, steal=steal,
                spend=_spend(edge, self.work))
        except Exception as exc:
            raise Problem(503, "queue_unavailable", detail=QUEUE_STORE_DOWN) from exc
        if claimed.kind == "replayed" and self.work is not None:
            raise work_refused(edge, config.event_id, ticket.account_id, PowVerdict.REPLAYED,
                               self.work.difficulty)
        edge.gate.forget(config.event_id, ticket.account_id)
        if claimed.kind == "gone" and config.policy == "passthrough":
            self.body.update(state="paused", position=None, eta_seconds=None)
            return
        if claimed.kind == "gone":
            self.drop_ticket = True
            self.body.update(state="expired", position=None, eta_seconds=None)
            return
        if claimed.kind == "elsewhere":
            self.body.update(state="elsewhere")
            return
        self.admission = edge.admissions.issue(config.event_id, ticket.account_id,
                                               claimed.session_id, REQUEST_ID.get())
        self.body.update(state="admitted", admission_token=self.admission)


async def _current(edge: Edge, event_id: int, account: uuid.UUID, sid: str) -> str | None:
    try:
        return await edge.gate.current_session(event_id, account, sid)
    except Problem:
        return None


@functools.lru_cache(maxsize=4096)  # an event's onsale_at, on every poll
def utc_iso_ts(ts: float) -> str:
    return utc_iso(datetime.fromtimestamp(ts, UTC))


async def present(request: Request, edge: Edge, config: EventConfig, ticket: Ticket,
                  presented: Presented, *, steal: bool, live: bool,
                  work: Work | None = None) -> Response:
    """``live``: the session record was checked (a join), not only its signature (a
    poll); ``work``: a passthrough join's proof of work, spent by its claim."""
    view = View(edge, config, ticket, presented, live=live, work=work)
    if config.policy == "passthrough":
        await view.admit(request, steal=steal)
        return _answered(edge, live, view)
    status = await _status(edge, config.event_id)
    if ticket.place == 0 and status.draw == "drawn":
        try:
            place = await edge.store.place_of(config.event_id, ticket.account_id)
        except Exception as exc:
            raise Problem(503, "queue_unavailable", detail=QUEUE_STORE_DOWN) from exc
        if place is None:
            view.drop_ticket = True
            view.body.update(state="expired", position=None, eta_seconds=None,
                             poll_after_seconds=edge.settings.queue_poll_seconds)
            return _answered(edge, live, view)
        view.ticket = ticket = Ticket(ticket.event_id, ticket.account_id, place, ticket.device)
    if _waits(config, status, ticket):
        return _waiting(edge, status, view)
    await view.admit(request, steal=steal)
    view.body["place"] = ticket.place or None
    return _answered(edge, live, view)


def _waits(config: EventConfig, status: Status, ticket: Ticket) -> bool:
    """Whether a visitor with this ticket waits (before the sale, or behind the front)
    rather than being admitted; a passthrough event and a drawn ticket still without
    its place are decided before this."""
    return ticket.place == 0 or not config.sale_open() or ticket.place > status.serving


def _waiting(edge: Edge, status: Status, view: View) -> Response:
    """The answer of a visitor who waits: the place, the position and the wait."""
    config, ticket = view.config, view.ticket
    edge.seen.add(config.event_id, ticket.account_id, _now_ms())
    if ticket.place == 0 or not config.sale_open():
        view.waiting("prequeue", status, ticket.place or None)
    else:
        paused = status.paused or status.state in PAUSED_STATES or edge.status.stale()
        view.waiting("paused" if paused else "waiting", status, ticket.place)
    view.body["place"] = ticket.place or None
    return _answered(edge, view.live, view)


def _answered(edge: Edge, live: bool, view: View) -> Response:
    if edge.metrics is not None:
        edge.metrics.answered("join" if live else "poll", str(view.body.get("state")))
    return view.response()


@dataclass(frozen=True)
class Presented:
    """The ticket a request carried (header for API clients, else the cookie)."""

    ticket: Ticket | None
    token: str | None


def read_ticket(request: Request, edge: Edge, event_id: int, account: uuid.UUID) -> Presented:
    prefix = settings_cookie_policy(edge.settings).prefix
    token = request.headers.get(TICKET_HEADER) or request.cookies.get(
        ticket_cookie(event_id, prefix))
    ticket = edge.tickets.read(token, event_id, account)
    return Presented(ticket, token if ticket is not None else None)


async def join(request: Request) -> Response:
    edge = edge_state(request)
    account = await current_account(request)
    event_id = int_path(request, "event_id", "event_not_found")
    ip = client_ip(request)
    _limit((edge.join_ip, edge.join_account), (ip, account))
    body = await read_body(request, QueueJoin, JOIN_CODES, optional=True)  # a proof of work
    config = await event_config(edge, event_id)
    if not config.queue_open():
        raise Problem(409, "queue_not_open", prequeue_at=utc_iso_ts(config.prequeue_at or 0))
    if config.now() >= config.starts_at:
        raise Problem(409, "queue_closed")
    presented = read_ticket(request, edge, event_id, account)
    ticket = presented.ticket
    work = None
    if ticket is None:  # a new device (tabs share their cookie, so their device)
        work = await require_work(request, edge, config, account, body)
        ticket = Ticket(event_id, account, 0, secrets.token_urlsafe(9))
    if config.policy != "passthrough":
        try:  # the join script spends the proof of work in the same step
            joined = await edge.store.join(event_id, account, config.policy, _now_ms(),
                                           spend=_spend(edge, work))
        except Exception as exc:
            raise Problem(503, "queue_unavailable", detail=QUEUE_STORE_DOWN) from exc
        if joined.kind == "replayed" and work is not None:
            raise work_refused(edge, event_id, account, PowVerdict.REPLAYED, work.difficulty)
        ticket = Ticket(event_id, account, joined.place, ticket.device)
        work = None
    return await present(request, edge, config, ticket, presented, steal=True, live=True,
                         work=work)


def _spend(edge: Edge, work: Work | None) -> Spend | None:
    return None if work is None else Spend(work.challenge_id, edge.pow.remember_ms(work))


def work_refused(edge: Edge, event_id: int, account: uuid.UUID, verdict: PowVerdict,
                 difficulty: int) -> Problem:
    """403 with the verdict's code and a fresh challenge to solve."""
    if edge.metrics is not None:
        edge.metrics.pow.labels(verdict.value).inc()
    challenge = edge.pow.issue(event_id, account, difficulty)
    return Problem(403, verdict.value, challenge=challenge.token, difficulty=difficulty,
                   expires_at=utc_iso_ts(challenge.expires_at))


RISK_REFUSED = ("This join looks automated, so it was not accepted. Join from an ordinary "
                "web browser with cookies on, one tab per account, and do not use scripts "
                "or proxies; if you were, wait a few minutes before trying again. If this "
                "keeps happening, contact support with the request id.")


def risk_verdict(request: Request, edge: Edge, config: EventConfig,
                 account: uuid.UUID) -> RiskVerdict:
    """The risk hook's verdict on a join from a new device, counted by band. The join
    is counted in the process's risk memory first. A hook that raises counts as high:
    it slows the visitor down, never lets more in."""
    ip = client_ip(request)
    headers = dict(request.headers)
    recent = edge.risk_memory.joined(account, ip, headers)
    facts = RiskFacts(config.event_id, account, ip, headers.get("user-agent", ""), headers,
                      thresholds=config.risk, recent=recent,
                      page_poll_seconds=float(edge.settings.queue_poll_seconds))
    try:
        verdict = verdict_of(edge.risk(facts))
    except Exception:
        verdict = RiskVerdict(Band.HIGH)  # a failing bot detector must not open the door
    if edge.metrics is not None:
        edge.metrics.risk_verdict(verdict.band.value, verdict.score)
    return verdict


async def require_work(request: Request, edge: Edge, config: EventConfig,
                       account: uuid.UUID, body: QueueJoin) -> Work | None:
    """The proof of work this join must spend (None when none is asked for);
    403 with a challenge when it is missing or wrong. Whether it was spent
    already is the join script's to say (``pow_replayed``)."""
    risk = risk_verdict(request, edge, config, account)
    if risk.band is Band.REFUSED:
        raise Problem(403, "risk_refused", detail=RISK_REFUSED)
    difficulty = required_difficulty(config.pow_difficulty, risk.band)
    if difficulty == 0:
        return None
    proof = None if isinstance(body.pow, UnsetType) else msgspec.structs.asdict(body.pow)
    verdict, work = edge.pow.check(proof, config.event_id, account, difficulty)
    if work is not None:
        if edge.metrics is not None:
            edge.metrics.pow.labels(verdict.value).inc()
        return work
    raise work_refused(edge, config.event_id, account, verdict, difficulty)


async def poll(request: Request) -> Response:
    """A waiting visitor's position is read from the cookie's signature alone
    (no Redis); reaching the front checks the session record (``View.admit``)."""
    edge = edge_state(request)
    account = signed_account(request)  # no Redis while waiting (kernel.sessions)
    event_id = int_path(request, "event_id", "event_not_found")
    _limit((edge.poll_ip, edge.poll_account), (client_ip(request), account))
    presented = read_ticket(request, edge, event_id, account)
    if presented.ticket is None:
        raise Problem(404, "not_in_queue")
    edge.risk_memory.polled(account)
    config = edge.configs.cached(event_id) or await event_config(edge, event_id)
    return await present(request, edge, config, presented.ticket, presented, steal=False,
                         live=False)


def quick_poll(scope: Scope) -> Response | None:
    """``poll``'s answer to a visitor who waits, from the raw scope (the fast lane's
    ``Quick``): the two cookies read from the raw ``Cookie`` header, no Starlette
    ``Request``. Anything else (no or a bad session cookie, a bad event id, no ticket
    or another's, an event or status not cached yet, a passthrough event, a drawn
    ticket without its place, a visitor at the front) is None before any limit is
    counted: ``poll`` answers it, with its checks in their order. The limits, the
    risk memory's poll and the "seen" mark are the same as ``poll``'s."""
    state = scope["app"].state
    edge: Edge = state["edge"]
    event_id = parse_id(scope["path_params"]["event_id"])
    if event_id is None:
        return None
    config = edge.configs.cached(event_id)
    status = edge.status.get(event_id)
    if config is None or status is None or config.policy == "passthrough":
        return None
    cookie = header = None
    for name, value in scope["headers"]:
        if name == b"cookie" and cookie is None:
            cookie = value
        elif name == b"queue-ticket" and header is None:
            header = value
    sessions = state["shared"].sessions
    key = (event_id, cookie, header)
    visitor = known = edge.visitors.get(key)
    if visitor is None:
        visitor = _visitor(edge, sessions, event_id, cookie, header)
        if visitor is None:
            return None
    ref, signed_at, ticket, token = visitor
    if not sessions.codec.current(signed_at) or (ticket.place == 0 and status.draw == "drawn") \
            or not _waits(config, status, ticket):
        return None
    client = scope.get("client")
    wait = (edge.poll_ip.allow(client[0] if client else "unknown")
            or edge.poll_account.allow(ref.account))  # as ``_limit``, in its order
    if wait > 0:
        if edge.metrics is not None:  # counted by its code, as ``queue`` counts it
            edge.metrics.answered("poll", "rate_limited")
        raise Problem(429, "rate_limited", retry_after=retry_after(wait))
    edge.risk_memory.polled(ref.account)
    if known is None and len(cookie or b"") + len(header or b"") <= MAX_REMEMBERED_HEADERS:
        edge.visitors.put(key, visitor)  # within its limits, and not a bloated header
    return _waiting(edge, status, View(edge, config, ticket, Presented(ticket, token),
                                       live=False))


def _visitor(edge: Edge, sessions: Sessions, event_id: int, cookie: bytes | None,
             header: bytes | None) -> tuple[SessionRef, int, Ticket, str] | None:
    """A visitor the quick poll has not seen with these headers: the session cookie
    and the ticket (the ``Queue-Ticket`` header, else the event's cookie), both
    checked; None: not one."""
    names = edge.cookie_names.get(event_id)
    if names is None:
        if len(edge.cookie_names) >= MAX_NAMED_EVENTS:
            edge.cookie_names.clear()
        names = edge.cookie_names[event_id] = (
            sessions.cookie_name.encode("latin-1"),
            ticket_cookie(event_id, settings_cookie_policy(edge.settings).prefix)
            .encode("latin-1"))
    session, ticket_token = raw_cookies(cookie, names)
    checked = sessions.codec.checked(session) if session else None
    if checked is None:
        return None
    ref, signed_at = checked
    token = header.decode("latin-1") if header else ticket_token
    ticket = edge.tickets.read(token, event_id, ref.account)
    if ticket is None or token is None:
        return None
    return ref, signed_at, ticket, token


async def queue(request: Request) -> Response:
    try:
        return await (join(request) if request.method == "POST" else poll(request))
    except Problem as exc:  # counted by its code (rate_limited: the 429s)
        metrics = edge_state(request).metrics
        if metrics is not None:
            metrics.answered("join" if request.method == "POST" else "poll", exc.code)
        raise


routes = [
    Route("/api/events/{event_id}/queue", queue, methods=["GET", "POST"]),
]
