"""The ``onsale`` command: dev, serve, migrate, audit, shard, event create and move."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg

from onsale.core.audit import audit_document, format_report, run_audit, violations
from onsale.core.event_move import MoveResult, move_event
from onsale.core.event_spec import EventSpec, parse_event_spec
from onsale.core.event_store import create_event
from onsale.core.migrate import MigrateResult, MigrationError, migrate
from onsale.core.queries import queries
from onsale.core.shard_directory import (
    add_shard,
    migrate_shards,
    new_event_home,
    set_patroni,
    shard_summary,
)
from onsale.embedded import (
    EmbeddedError,
    EmbeddedPostgres,
    start_postgres,
    start_psp,
    start_valkey,
    start_valkey_cluster,
)
from onsale.environment import report_unknown
from onsale.kernel import patroni_api
from onsale.kernel.beacon_chain import Chain, ChainError, chain_setting
from onsale.kernel.config import CommandSettings, ConfigError, Settings, hold_defaults
from onsale.kernel.db import init_connection
from onsale.kernel.http_limits import HttpLimits
from onsale.kernel.logs import LogSettings
from onsale.kernel.logs import configure as configure_logs
from onsale.kernel.ops_listener import PUBLIC, Listener, OpsSettings
from onsale.kernel.ops_server import ops_listener
from onsale.kernel.placement import masked_dsn
from onsale.kernel.private_files import narrow_file, private_dir, write_private
from onsale.kernel.progress import Progress, silent
from onsale.kernel.settings import load
from onsale.progress_view import shown
from onsale.roles import ROLES, SECRETLESS_ROLES

if TYPE_CHECKING:
    from onsale.compose import WebSocketLimits

DEMO_EVENT = "onsale demo night"
# Beside its seats, the demo sells a standing floor (docs/general-admission.md).
DEMO_GA_TIER = {"name": "Floor (standing)", "price_minor": 6500, "capacity": 5000,
                "stripes": 8}
PROVIDER_ROLES = ("core", "worker")  # the roles that talk to the payment provider


def data_dir() -> Path:
    return Path(load(CommandSettings, os.environ).data_dir).resolve()


def dev_secrets(directory: Path) -> dict[str, str]:
    """Keep dev secrets stable across runs so sessions and the admin token survive.
    The folder is 0700 and the file 0600 from the moment each exists (an older,
    broader one is narrowed first): docs/security.md#files-on-disk."""
    private_dir(directory)
    path = directory / "secrets.json"
    narrow_file(path)
    stored: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    wanted = {"ONSALE_SECRET_KEY": secrets.token_urlsafe(32),
              "ONSALE_ADMIN_TOKEN": secrets.token_urlsafe(24),
              "ONSALE_PSP_SECRET_KEY": "sk_dev_" + secrets.token_hex(16),
              "ONSALE_PSP_WEBHOOK_SECRET": "whsec_dev_" + secrets.token_hex(16),
              "ONSALE_PSP_PUBLISHABLE_KEY": "pk_dev_" + secrets.token_hex(16),
              "ONSALE_PSP_SIM_KEY": "sim_dev_" + secrets.token_hex(16)}
    missing = {k: v for k, v in wanted.items() if k not in stored}
    if missing:
        stored.update(missing)
        write_private(path, json.dumps(stored).encode())
    return stored


@contextmanager
def database_url() -> Iterator[str]:
    """DATABASE_URL, or the embedded cluster under .onsale/ (started if needed)."""
    url = os.environ.get("DATABASE_URL")
    if url:
        yield url
        return
    pg: EmbeddedPostgres = start_postgres(data_dir() / "pg")
    try:
        yield pg.url
    finally:
        if pg.started_here:
            pg.stop()


async def _connect(url: str) -> Any:
    conn = await asyncpg.connect(url)
    await init_connection(conn)
    return conn


async def _migrate(url: str) -> MigrateResult:
    conn = await _connect(url)
    try:
        return await migrate(conn)
    finally:
        await conn.close()


async def _migrate_all(url: str, progress: Progress = silent) -> list[str]:
    """The directory (shard 1, when it is one), then every other listed shard."""
    conn = await _connect(url)
    try:
        own = (await migrate(conn, progress=lambda what, n, of: progress(
            f"shard 1: {what}", n, of))).describe()
        shards = await migrate_shards(conn, _connect, progress)
        if not shards:  # one database: the directory and shard 1
            return [own]
        lines = [f"directory: {own}"]
        for shard_id, applied in shards.items():
            lines.append(f"shard {shard_id}: {applied.describe()}")
    finally:
        await conn.close()
    return lines


async def _shard_add(url: str, dsn: str, patroni: list[str]) -> str:
    conn = await _connect(url)
    try:
        await migrate(conn)
        shard_id, applied = await add_shard(conn, dsn, _connect)
        slot = await _set_patroni(conn, shard_id, patroni) if patroni else ""
    finally:
        await conn.close()
    return f"shard {shard_id} added: {masked_dsn(dsn)} ({applied.describe()}){slot}"


async def _shard_patroni(url: str, shard_id: int, patroni: list[str]) -> str:
    conn = await _connect(url)
    try:
        slot = await _set_patroni(conn, shard_id, patroni)
    finally:
        await conn.close()
    return (f"shard {shard_id}: Patroni nodes {', '.join(patroni)}{slot}" if patroni
            else f"shard {shard_id}: a single server")


def _capture_slot() -> str:
    """Shard 1's change-capture slot as configured (``ONSALE_SEATMAP_SLOT``)."""
    from onsale.seatmap.config import SeatmapSettings

    return load(SeatmapSettings, os.environ).slot


async def _set_patroni(directory: Any, shard_id: int, patroni: list[str]) -> str:
    """List the shard's Patroni nodes, and declare its change capture's slot permanent
    in the cluster's configuration (docs/operations.md#failover); what was done, as a
    phrase for the CLI's answer."""
    from onsale.seatmap.shard_plan import slot_name

    await set_patroni(directory, shard_id, patroni)
    if not patroni:
        return ""
    dsn = await directory.fetchval("SELECT dsn FROM shards WHERE shard_id = $1", shard_id)
    database = (urllib.parse.urlsplit(dsn).path.lstrip("/") or "postgres" if dsn
                else await directory.fetchval("SELECT current_database()"))  # '': this one
    slot = slot_name(_capture_slot(), shard_id)
    added = await asyncio.to_thread(patroni_api.declare_slot, patroni, slot, database)
    return f"; slot {slot} {'declared' if added else 'already'} permanent in Patroni"


async def _shard_list(url: str) -> list[dict[str, Any]]:
    """The directory's shard list, with each Patroni shard's members as /cluster reports
    them (asked at once, each in a thread)."""
    conn = await _connect(url)
    try:
        shards = await shard_summary(conn)
    finally:
        await conn.close()
    pids = patroni_api.local_postmasters()
    docs = await asyncio.gather(*(asyncio.to_thread(patroni_api.cluster, s["patroni"])
                                  for s in shards))
    for s, doc in zip(shards, docs, strict=True):
        s["members"] = patroni_api.members(doc, pids) if s["patroni"] else []
        if s["patroni"] and doc is None:
            s["members_error"] = "no Patroni node answers"
    return shards


async def _patroni_urls(url: str, shard_id: int) -> list[str]:
    conn = await _connect(url)
    try:
        urls = await conn.fetchval("SELECT patroni FROM shards WHERE shard_id = $1", shard_id)
    finally:
        await conn.close()
    if urls is None:
        raise ValueError(f"no shard {shard_id} (onsale shard list)")
    if not urls:
        raise ValueError(f"shard {shard_id} is a single server: no Patroni nodes are listed "
                         "(onsale shard patroni)")
    return list(urls)


async def _audit(url: str, only: int | None = None, *, as_json: bool = False) -> int:
    """Every shard's checks, each in its own snapshot: the directory's database (shard
    1, when it is one), then each listed shard; ``only``: that shard alone."""
    conn = await _connect(url)
    try:
        listed = await conn.fetch("SELECT shard_id, dsn FROM shards ORDER BY shard_id")
        targets = [(r["shard_id"], r["dsn"]) for r in listed] or [(1, "")]
        if only is not None:
            targets = [t for t in targets if t[0] == only]
            if not targets:
                raise ValueError(f"no shard {only} (onsale shard list)")
        reports = []
        for shard_id, dsn in targets:
            if not dsn:
                reports.append((shard_id, await run_audit(conn)))
                continue
            other = await _connect(dsn)
            try:
                reports.append((shard_id, await run_audit(other)))
            finally:
                await other.close()
    finally:
        await conn.close()
    if as_json:
        doc = audit_document(reports)
        print(json.dumps(doc, indent=2))
        return 1 if doc["violations"] else 0
    if len(listed) <= 1:  # one database: the report as it always was
        print(format_report(reports[0][1]))
        return 1 if violations(reports[0][1]) else 0
    found = 0
    for shard_id, results in reports:
        print(f"== shard {shard_id}")
        print(format_report(results))
        found += violations(results)
    names = ", ".join(str(s) for s, _ in reports)
    print(f"audit: {found} violation(s) on shards {names}" if found
          else f"audit: no violations on shards {names}")
    return 1 if found else 0


async def _seed(url: str, seats: int, progress: Progress = silent) -> tuple[int, bool]:
    conn = await _connect(url)
    try:
        existing = await conn.fetchval(queries("events")["event_by_name"], DEMO_EVENT)
        if existing is not None:
            return int(existing), False
        spec = await event_spec(conn, {"name": DEMO_EVENT, "seats": seats,
                                       "ga_tiers": [DEMO_GA_TIER]})
        return await create_event(conn, spec, progress=progress, beacon=_beacon()), True
    finally:
        await conn.close()


def _beacon() -> Chain | None:
    """The chain a new random draw commits to (ONSALE_BEACON, checked like Settings)."""
    try:
        return chain_setting(os.environ.get("ONSALE_BEACON", "off"))
    except ChainError as exc:
        raise ConfigError(f"ONSALE_BEACON: {exc}") from None


async def event_spec(conn: Any, body: dict[str, Any]) -> EventSpec:
    """An event spec with per-event defaults from the environment (validated like
    Settings) and "on sale now" in database time."""
    defaults = hold_defaults(os.environ)
    return parse_event_spec(
        body,
        default_ttl=defaults.hold_ttl_seconds,
        default_limit=defaults.max_tickets_per_account,
        default_max_hold=defaults.max_seats_per_hold,
        now=await conn.fetchval("SELECT now()"),
    )


async def _create_event(url: str, body: dict[str, Any], progress: Progress = silent) -> int:
    """On the shard asked for, else the active one with the fewest events on sale
    (docs/scaling.md#placing-an-event)."""
    conn = await _connect(url)
    try:
        spec = await event_spec(conn, body)
        home = await new_event_home(conn, spec.shard)
        if not home.dsn:  # the directory's own database
            return await create_event(conn, spec, progress=progress, beacon=_beacon())
        shard = await _connect(home.dsn)
        try:
            return await create_event(conn, spec, shard_id=home.shard_id, shard=shard,
                                      progress=progress, beacon=_beacon())
        finally:
            await shard.close()
    finally:
        await conn.close()


async def _move_event(url: str, event_id: int, target: int) -> MoveResult:
    from onsale.kernel.problems import Problem

    conn = await _connect(url)
    try:
        dsns = {r["shard_id"]: r["dsn"] or url
                for r in await conn.fetch("SELECT shard_id, dsn FROM shards")}

        @asynccontextmanager
        async def open_shard(shard_id: int) -> AsyncIterator[Any]:
            if shard_id not in dsns:
                raise Problem(422, "shard_not_found")
            other = await _connect(dsns[shard_id])
            try:
                yield other
            finally:
                await other.close()

        return await move_event(conn, open_shard, event_id, target)
    finally:
        await conn.close()


def _serve(app: Any, host: str, port: int, ready_message: str | None = None, *,
           ws_limits: WebSocketLimits | None = None, ops: tuple[str, int] | None = None) -> None:
    """Serve ``app`` on ``host:port`` and its ops routes on ``ops`` (host, port;
    kernel/ops_listener.py), one process, one event loop, until SIGTERM or Ctrl-C."""
    import contextlib

    import uvicorn

    from onsale.compose import WebSocketLimits

    ws = ws_limits or WebSocketLimits()
    limits = HttpLimits.from_env(os.environ)

    class Server(uvicorn.Server):
        ops_stack: contextlib.AsyncExitStack | None = None

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if not self.started:
                return
            if ops is not None:  # after the lifespan: the state the ops routes read exists
                self.ops_stack = contextlib.AsyncExitStack()
                await self.ops_stack.enter_async_context(ops_listener(app, *ops, limits))
            if ready_message:
                print(ready_message, flush=True)

        async def shutdown(self, sockets: Any = None) -> None:
            if self.ops_stack is not None:
                await self.ops_stack.aclose()
            await super().shutdown(sockets=sockets)

    from onsale.kernel.http_server import uvicorn_config

    # HTTP: the bounded, corked protocol (docs/security.md#bounded-http), its limits
    # from ONSALE_HTTP_* (checked by the caller before any service starts).
    # WebSockets (the seat map): the sans-I/O protocol, whose sends do not wait while the
    # socket can take more; no per-message compression (each frame is serialized once for
    # every client); pings find dead sockets; clients send (almost) nothing, so a
    # message over ONSALE_SEATMAP_CLIENT_MAX_MESSAGE_BYTES closes the socket with 1009
    # before it is buffered (docs/security.md#websockets).
    ping = ws.ping_interval
    config = uvicorn_config(Listener(app, PUBLIC) if ops is not None else app, host, port,
                            limits, log_level="warning", ws="websockets-sansio",
                            ws_per_message_deflate=False, ws_ping_interval=ping,
                            ws_ping_timeout=ping, ws_max_size=ws.max_message_bytes,
                            access_log=False, log_config=None, lifespan="on",
                            proxy_headers=False,
                            server_header=False, date_header=False)
    from onsale.compose import tune_gc, tune_malloc

    tune_gc()
    tune_malloc()
    import signal

    def stopped(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # so `onsale dev` stops its embedded servers (finally)

    # uvicorn shuts down cleanly on SIGTERM, then raises the signal again: without this
    # handler that second one would end the process before the callers' cleanup.
    previous = signal.signal(signal.SIGTERM, stopped)
    try:
        Server(config).run()
    except KeyboardInterrupt:  # uvicorn re-raises Ctrl-C (and SIGTERM) after shutdown
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass(frozen=True)
class DevShard:
    """One more shard of ``onsale dev --shards N``: where to create database ``onsale``
    (``admin_url``), its DSN, where it lives, and its Patroni nodes' APIs (--ha)."""

    admin_url: str
    dsn: str
    where: str
    patroni: tuple[str, ...] = ()


async def _dev_shards(directory_url: str, servers: list[DevShard]) -> list[str]:
    """``onsale dev --shards N``: database ``onsale`` on each extra server, listed as the
    next shard the first time (``onsale shard add``); on a later start the server's port
    may have changed, so the listed DSN follows it (a database keeps its number). Then
    every shard is migrated, and the banner lines list the shards."""
    from onsale.seatmap.shard_plan import slot_name

    directory = await _connect(directory_url)
    try:
        for server in servers:
            admin = await asyncpg.connect(server.admin_url)
            try:
                if not await admin.fetchval(
                        "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'onsale')"):
                    await admin.execute("CREATE DATABASE onsale")
            finally:
                await admin.close()
            dsn = server.dsn
            conn = await _connect(dsn)
            try:
                shard_id = (await conn.fetchval("SELECT shard_id FROM shard_identity")
                            if await conn.fetchval("SELECT to_regclass('shard_identity')")
                            else None)
            finally:
                await conn.close()
            if shard_id is None:
                shard_id, _ = await add_shard(directory, dsn, _connect)
            elif await directory.fetchval(
                    "UPDATE shards SET dsn = $2 WHERE shard_id = $1 RETURNING shard_id",
                    shard_id, dsn) is None:
                raise ConfigError(
                    f"{server.where} holds shard {shard_id}, which the directory does not "
                    "list (a directory started over?): remove that directory to start over")
            if server.patroni:
                await _set_patroni(directory, shard_id, list(server.patroni))
        await migrate_shards(directory, _connect)
        rows = await directory.fetch("SELECT shard_id, dsn FROM shards ORDER BY shard_id")
    finally:
        await directory.close()
    slot = _capture_slot()
    return [f"shard {r['shard_id']} {masked_dsn(r['dsn'])}, change capture on slot "
            f"{slot_name(slot, r['shard_id'])}" for r in rows]


def _start_ha(base: Path, shards: int, started: list[Any]) -> list[DevShard]:
    """``onsale dev --ha``: etcd, one Patroni cluster of three nodes per shard and HAProxy
    routing each shard's address to its leader; started over on every run."""
    from onsale.patroni import start_etcd, start_haproxy, start_patroni_cluster
    from onsale.seatmap.shard_plan import slot_name

    etcd = start_etcd(base / "etcd")
    started.append(etcd)
    clusters = []
    for n in range(1, shards + 1):
        cluster = start_patroni_cluster(base, etcd, f"shard{n}")
        started.append(cluster)
        clusters.append(cluster)
        # The change capture's slot, permanent (docs/seatmap.md#after-a-failover): made
        # now, since Patroni restarts each standby once to copy it.
        slot = slot_name(_capture_slot(), n)
        patroni_api.declare_slot([node.rest for node in cluster.nodes], slot, cluster.database)
        cluster.wait_slot(slot)
        cluster.wait_streaming()
    proxy = start_haproxy(base / "haproxy", clusters)
    started.append(proxy)
    return [DevShard(proxy.dsn(c.scope, "postgres"), proxy.dsn(c.scope), c.scope,
                     tuple(node.rest for node in c.nodes)) for c in clusters]


def cmd_dev(args: argparse.Namespace) -> int:
    from onsale.compose import build_app, websocket_limits

    base = data_dir()
    env = dict(os.environ)
    for key, value in dev_secrets(base).items():
        env.setdefault(key, value)
    started: list[Any] = []
    report_unknown(os.environ, "onsale dev")
    try:
        HttpLimits.from_env(env)  # a bad ONSALE_HTTP_* stops dev before anything starts
        ops = OpsSettings.from_env(env)
        ops_address = (ops.ops_host, ops.port_for(args.port))
        shard_servers: list[DevShard] = []
        directory_patroni: tuple[str, ...] = ()
        if args.ha:  # docs/operations.md#onsale-dev---ha
            if env.get("DATABASE_URL"):
                raise ConfigError("--ha starts its own Patroni clusters: unset DATABASE_URL")
            ha = _start_ha(base / "ha", args.shards, started)
            env["DATABASE_URL"] = ha[0].dsn
            directory_patroni = ha[0].patroni
            shard_servers = ha[1:]
        elif not env.get("DATABASE_URL"):
            pg = start_postgres(base / "pg")
            if pg.started_here:
                started.append(pg)
            env["DATABASE_URL"] = pg.url
        for n in range(2, args.shards + 1) if not args.ha else ():  # docs/scaling.md
            server = start_postgres(base / f"pg-shard{n}")
            if server.started_here:
                started.append(server)
            shard_servers.append(DevShard(server.url, server.url_for("onsale"),
                                          str(server.data_dir)))
        if args.valkey_cluster and env.get("REDIS_URL"):
            raise ConfigError("--valkey-cluster starts a cluster of its own: unset REDIS_URL")
        if args.valkey_cluster:  # three primaries, docs/scaling.md#valkey-cluster
            cluster = start_valkey_cluster(base / "valkey-cluster")
            started.append(cluster)
            env["REDIS_URL"] = cluster.url
        elif not env.get("REDIS_URL"):
            valkey = start_valkey(base / "valkey")
            started.append(valkey)
            env["REDIS_URL"] = valkey.url
        if not env.get("ONSALE_STRIPE_SECRET_KEY"):  # no provider given: the simulator
            env["ONSALE_PSP_WEBHOOK_URL"] = f"http://127.0.0.1:{args.port}/api/webhooks/payments"
            psp = start_psp(base / "psp", env)
            started.append(psp)
            # Core speaks Stripe's protocol through the SDK, pointed at the simulator.
            env["ONSALE_STRIPE_API_BASE"] = psp.url
            env["ONSALE_STRIPE_SECRET_KEY"] = env["ONSALE_PSP_SECRET_KEY"]
            env["ONSALE_STRIPE_PUBLISHABLE_KEY"] = env["ONSALE_PSP_PUBLISHABLE_KEY"]
            env["ONSALE_STRIPE_WEBHOOK_SECRET"] = env["ONSALE_PSP_WEBHOOK_SECRET"]
            env.setdefault("ONSALE_ALLOW_SIMULATOR", "true")  # dev pays the simulator
        env.setdefault("ONSALE_PUBLIC_URL", f"http://{args.host}:{args.port}")
        settings = Settings.from_env(env, dev=True)
        applied = asyncio.run(_migrate(settings.database_url))
        if directory_patroni:
            shard_lines = [asyncio.run(_shard_patroni(settings.database_url, 1,
                                                      list(directory_patroni)))]
        else:
            shard_lines = []
        if shard_servers:
            shard_lines += asyncio.run(_dev_shards(settings.database_url, shard_servers))
        with shown("onsale dev") as progress:
            event_id, created = asyncio.run(_seed(settings.database_url, args.seats, progress))
        url = f"http://{args.host}:{args.port}/"
        print(f"onsale dev: {applied.describe()}")
        for line in shard_lines:
            print(f"onsale dev: {line}")
        print(f"onsale dev: demo event {event_id} "
              f"({'seeded' if created else 'already there'}) — {url}api/events/{event_id}")
        print(f"onsale dev: admin token {settings.admin_token}")
        if args.valkey_cluster:
            print(f"onsale dev: Valkey Cluster of three primaries, REDIS_URL={settings.redis_url}")
        if args.ha:
            print(f"onsale dev: {args.shards} shard(s), each a Patroni cluster of three nodes "
                  "behind HAProxy (onsale shard list; docs/operations.md#failover), "
                  f"DATABASE_URL={settings.database_url}")
        print(f"onsale dev: payment provider {settings.stripe_api_base}/ "
              "(test cards in docs/psp.md)")
        print(f"onsale dev: seat map {url}api/events/{event_id}/seatmap and "
              f"ws://{args.host}:{args.port}/ws/events/{event_id}/seatmap "
              "(docs/seatmap-protocol.md)")
        _serve(build_app("dev", settings), args.host, args.port, ws_limits=websocket_limits("dev"),
               ops=ops_address,
               ready_message=f"onsale dev: serving on {url}  (Ctrl-C to stop)")
    except (ConfigError, EmbeddedError) as exc:
        print(f"onsale dev: {exc}", file=sys.stderr)
        return 2
    except MigrationError as exc:
        print(f"onsale dev: {exc}. The development database in {base} predates this "
              "version; remove that directory to start over.", file=sys.stderr)
        return 2
    finally:
        for server in reversed(started):
            server.stop()
        if started:
            print("onsale dev: embedded servers stopped")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from onsale.compose import build_app, websocket_limits

    try:
        report_unknown(os.environ, "onsale serve")
        settings = Settings.from_env(require_secrets=args.role not in SECRETLESS_ROLES)
        HttpLimits.from_env(os.environ)
        if args.role in PROVIDER_ROLES:  # never the simulator by accident
            from onsale.core.psp_client import check_provider

            warning = check_provider(settings)
            if warning:
                print(f"onsale serve: {warning}", file=sys.stderr)
        ops = OpsSettings.from_env(os.environ)
        ops_address = (ops.ops_host, ops.port_for(args.port))
        app = build_app(args.role, settings)  # the edge refuses to start without REDIS_URL
    except ConfigError as exc:
        print(f"onsale serve: {exc}", file=sys.stderr)
        return 2
    _serve(app, args.host, args.port, ws_limits=websocket_limits(args.role), ops=ops_address,
           ready_message=f"onsale {args.role}: serving on http://{args.host}:{args.port}/")
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    try:
        with database_url() as url, shown("onsale migrate") as progress:
            lines = asyncio.run(_migrate_all(url, progress))
    except Exception as exc:  # a migration error, an outage or a bad URL: exit 2
        print(f"onsale migrate: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


def cmd_shard_add(args: argparse.Namespace) -> int:
    try:
        with database_url() as url:
            print(asyncio.run(_shard_add(url, args.dsn, args.patroni)))
    except Exception as exc:  # a refused DSN, an outage, a migration error: exit 2
        print(f"onsale shard add: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_shard_patroni(args: argparse.Namespace) -> int:
    try:
        with database_url() as url:
            print(asyncio.run(_shard_patroni(url, args.shard, args.urls)))
    except Exception as exc:
        print(f"onsale shard patroni: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_shard_switchover(args: argparse.Namespace) -> int:
    """A planned switchover of a Patroni shard (maintenance): the leader hands over to a
    synchronous standby; onsale's resume runs on the new primary as after a failover."""
    try:
        with database_url() as url:
            urls = asyncio.run(_patroni_urls(url, args.shard))
        done = patroni_api.switchover(urls, args.candidate)
    except Exception as exc:
        print(f"onsale shard switchover: {exc}", file=sys.stderr)
        return 2
    print(f"shard {args.shard}: switchover from {done['from']}: {done['answer']}")
    return 0


def cmd_shard_list(args: argparse.Namespace) -> int:
    try:
        with database_url() as url:
            shards = asyncio.run(_shard_list(url))
    except Exception as exc:
        print(f"onsale shard list: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(shards, indent=2))
        return 0
    print(f"{'shard':>5}  {'state':<8} {'epoch':>5} {'events':>6} {'on sale':>7}  dsn")
    for s in shards:
        print(f"{s['shard']:>5}  {s['state']:<8} {s['epoch']:>5} {s['events']:>6} "
              f"{s['on_sale']:>7}  {s['dsn']}")
        for m in s["members"]:
            print(f"{'':>7}{m['name']} {m['host']}:{m['port']} {m['role']} {m['state']} "
                  f"timeline {m['timeline']} lag {m['lag']}"
                  + (f" pid {m['pid']}" if m["pid"] else ""))
        if "members_error" in s:
            print(f"{'':>7}{s['members_error']}")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    """Exit 0: no violation; 1: violations printed; 2: could not run the checks."""
    try:
        with database_url() as url:
            return asyncio.run(_audit(url, args.shard, as_json=args.json))
    except Exception as exc:  # anything but a finished audit: exit 2, never 1
        print(f"onsale audit: could not run the checks: {exc}", file=sys.stderr)
        return 2


def _number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def parse_ga_tier_option(text: str) -> dict[str, Any]:
    """``--ga-tier NAME:PRICE_MINOR:CAPACITY[:STRIPES[:MAX_PER_HOLD]]`` as a ga_tiers
    entry (the numbers are checked by parse_event_spec, like POST /api/ops/events)."""
    parts = text.rsplit(":", 4) if text.count(":") >= 2 else []
    while len(parts) > 3 and not _number(parts[1]):  # a colon inside the name
        parts[0:2] = [parts[0] + ":" + parts[1]]
    if len(parts) < 3 or not all(_number(p) for p in parts[1:]):
        raise ValueError(f"--ga-tier {text!r}: expected NAME:PRICE_MINOR:CAPACITY"
                         "[:STRIPES[:MAX_PER_HOLD]]")
    tier: dict[str, Any] = {"name": parts[0], "price_minor": int(parts[1]),
                            "capacity": int(parts[2])}
    for key, value in zip(("stripes", "max_per_hold"), parts[3:], strict=False):
        tier[key] = int(value)
    return tier


def cmd_event_create(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"name": args.name, "seats": args.seats}
    if args.shard is not None:
        body["shard"] = args.shard
    if args.ga_tier:
        try:
            body["ga_tiers"] = [parse_ga_tier_option(t) for t in args.ga_tier]
        except ValueError as exc:
            print(f"onsale event create: {exc}", file=sys.stderr)
            return 2
    for field in ("hold_ttl_seconds", "max_tickets_per_account", "max_seats_per_hold",
                  "onsale_at", "starts_at", "venue_name", "time_zone", "queue_policy",
                  "prequeue_at", "admission_rate_min", "admission_rate_max", "active_cap",
                  "pow_difficulty"):
        value = getattr(args, field)
        if value is not None:
            body[field] = value
    from onsale.kernel.problems import Problem

    try:
        with database_url() as url, shown("onsale event create") as progress:
            event_id = asyncio.run(_create_event(url, body, progress))
    except Problem as exc:
        print(f"onsale event create: {exc.detail}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"onsale event create: {exc}", file=sys.stderr)
        return 2
    print(event_id)
    return 0


def cmd_event_list(args: argparse.Namespace) -> int:
    from onsale.core.event_report import event_list, list_text

    async def run(url: str) -> list[dict[str, Any]]:
        conn = await _connect(url)
        try:
            return await event_list(conn, args.limit)
        finally:
            await conn.close()

    try:
        with database_url() as url:
            rows = asyncio.run(run(url))
    except Exception as exc:  # an outage or a bad URL: exit 2
        print(f"onsale event list: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(rows, indent=2) if args.json else list_text(rows))
    return 0


def cmd_event_show(args: argparse.Namespace) -> int:
    from onsale.core.event_report import event_show, show_text

    async def run(url: str) -> dict[str, Any] | None:
        conn = await _connect(url)
        try:
            return await event_show(conn, args.event_id, _connect)
        finally:
            await conn.close()

    try:
        with database_url() as url:
            doc = asyncio.run(run(url))
    except Exception as exc:  # an outage or a bad URL: exit 2
        print(f"onsale event show: {exc}", file=sys.stderr)
        return 2
    if doc is None:
        print(f"onsale event show: no event {args.event_id} (onsale event list)",
              file=sys.stderr)
        return 1
    print(json.dumps(doc, indent=2) if args.json else show_text(doc))
    return 0


def cmd_queue(args: argparse.Namespace) -> int:
    from onsale.queue_cli import QueueCommandError, admin_token, queue_command, status_text

    try:
        token = admin_token(dict(os.environ), data_dir())
        doc = queue_command(args.queue_command, args.event_id, args.url, token)
    except QueueCommandError as exc:
        print(f"onsale queue {args.queue_command}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(doc, indent=2) if args.json else status_text(doc))
    return 0


def cmd_event_move(args: argparse.Namespace) -> int:
    """Exit 0: moved (or there already); 2: refused or failed, the reason on stderr."""
    from onsale.kernel.problems import Problem

    try:
        with database_url() as url:
            moved = asyncio.run(_move_event(url, args.event_id, args.shard))
    except Problem as exc:
        print(f"onsale event move: {exc.detail or exc.code}", file=sys.stderr)
        return 2
    except Exception as exc:  # an outage, a bad URL: nothing was switched, or the move
        print(f"onsale event move: {exc}", file=sys.stderr)  # is whole; run it again
        return 2
    if not moved.moved:
        print(f"event {moved.event_id} is on shard {moved.target} already")
        return 0
    rows = ", ".join(f"{name} {n}" for name, n in moved.rows.items() if n)
    print(f"event {moved.event_id} moved from shard {moved.source} to shard {moved.target}"
          f" ({rows})")
    return 0


def cmd_config_check(args: argparse.Namespace) -> int:
    """Exit 0: the role would start (warnings on stderr); 2: it would not."""
    from onsale.config_check import check

    result = check(args.role, os.environ)
    for line in result.warnings:
        print(f"onsale config check: warning: {line}", file=sys.stderr)
    if not result.ok:
        print(f"onsale config check: {args.role} would not start: {result.error}",
              file=sys.stderr)
        return 2
    print(f"# onsale serve --role {args.role} would use (secrets masked):")
    print("\n".join(result.lines))
    return 0


def _version() -> str:
    from onsale.kernel.version import onsale_version

    return onsale_version()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onsale", description=__doc__)
    p.add_argument("--version", action="version", version=f"onsale {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    dev = sub.add_parser("dev", help="run every role in one process with embedded services")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--port", type=int, default=8000)
    dev.add_argument("--seats", type=int, default=50_000, help="seats in the demo event")
    dev.add_argument("--valkey-cluster", action="store_true",
                     help="start a Valkey Cluster of three primaries (in "
                     "$ONSALE_DATA_DIR/valkey-cluster) instead of one Valkey")
    dev.add_argument("--ha", action="store_true",
                     help="every shard a Patroni cluster of three PostgreSQL nodes with etcd "
                          "and HAProxy, started over each run (make ha; "
                          "docs/operations.md#failover)")
    dev.add_argument("--shards", type=int, default=1, choices=range(1, 9), metavar="N",
                     help="N shards: the directory (shard 1) and N-1 more embedded "
                     "PostgreSQL servers (in $ONSALE_DATA_DIR/pg-shard<n>), each with its "
                     "own change capture")
    dev.set_defaults(func=cmd_dev)

    serve = sub.add_parser("serve", help="run one role against configured services")
    serve.add_argument("--role", required=True,
                       choices=ROLES)
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=8000)
    serve.set_defaults(func=cmd_serve)

    sub.add_parser("psp", add_help=False,  # main() hands its arguments to psp.cli
                   help="run the payment provider simulator (onsale psp --help)")
    sub.add_parser("migrate", help="apply pending migrations and changed SQL functions"
                   ).set_defaults(func=cmd_migrate)
    audit = sub.add_parser("audit", help="check the invariants on every shard; exit 1 on any "
                           "violation")
    audit.add_argument("--shard", type=int, default=None, help="that shard alone")
    audit.add_argument("--json", action="store_true",
                       help="one JSON document: per shard, each check's count and rows")
    audit.set_defaults(func=cmd_audit)

    config = sub.add_parser("config", help="the environment's settings")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    config_check = config_sub.add_parser(
        "check", help="read a role's environment as `onsale serve` would: print what it "
                      "would use (secrets masked), warn on unknown ONSALE_* names; exit 2 "
                      "if it would not start")
    config_check.add_argument("--role", required=True, choices=(*ROLES, "dev"))
    config_check.set_defaults(func=cmd_config_check)

    queue = sub.add_parser("queue", help="an event's waiting room, through the edge's "
                           "operator API (docs/edge.md#operator-api)")
    queue_sub = queue.add_subparsers(dest="queue_command", required=True)
    for action, text in (("status", "its figures and controller"),
                         ("pause", "stop admitting (visitors keep their place)"),
                         ("resume", "admit again, from the controller's minimum rate")):
        one = queue_sub.add_parser(action, help=text)
        one.add_argument("event_id", type=int)
        one.add_argument("--url", default=os.environ.get("ONSALE_PUBLIC_URL")
                         or "http://127.0.0.1:8000",
                         help="an edge (or onsale dev); default ONSALE_PUBLIC_URL")
        one.add_argument("--json", action="store_true")
        one.set_defaults(func=cmd_queue)

    from onsale.fairness_cli import add_parser as add_fairness
    add_fairness(sub, data_dir)
    from onsale.ticket_cli import add_parser as add_ticket
    add_ticket(sub)

    shard = sub.add_parser("shard", help="the shards events are placed on (docs/scaling.md)")
    shard_sub = shard.add_subparsers(dest="shard_command", required=True)
    add = shard_sub.add_parser("add", help="migrate a PostgreSQL database and list it as "
                               "the next shard")
    add.add_argument("dsn", help="the shard's connection URL, as every process will use it")
    add.add_argument("--patroni", action="append", default=[], metavar="URL",
                     help="the REST API of one of the shard's Patroni nodes (repeat for "
                          "each; docs/operations.md#failover)")
    add.set_defaults(func=cmd_shard_add)
    patroni = shard_sub.add_parser("patroni", help="record the REST APIs of a shard's "
                                   "Patroni nodes (none: a single server)")
    patroni.add_argument("shard", type=int)
    patroni.add_argument("urls", nargs="*", metavar="URL")
    patroni.set_defaults(func=cmd_shard_patroni)
    switch = shard_sub.add_parser("switchover", help="a planned switchover of a Patroni "
                                  "shard, for maintenance")
    switch.add_argument("--shard", type=int, required=True)
    switch.add_argument("--candidate", help="the node to promote (default: Patroni's choice "
                        "among the synchronous standbys)")
    switch.set_defaults(func=cmd_shard_switchover)
    listing = shard_sub.add_parser("list", help="the shards, their epochs and events")
    listing.add_argument("--json", action="store_true", help="one JSON document")
    listing.set_defaults(func=cmd_shard_list)

    event = sub.add_parser("event", help="manage events")
    event_sub = event.add_subparsers(dest="event_command", required=True)
    create = event_sub.add_parser("create", help="create an event from a generated layout")
    create.add_argument("--name", required=True)
    create.add_argument("--seats", type=int, default=50_000,
                        help="seats in the generated layout; 0 with --ga-tier: GA only")
    create.add_argument("--ga-tier", dest="ga_tier", action="append", default=[],
                        metavar="NAME:PRICE_MINOR:CAPACITY[:STRIPES[:MAX_PER_HOLD]]",
                        help="a general-admission tier (repeatable; "
                             "docs/general-admission.md)")
    create.add_argument("--hold-ttl-seconds", dest="hold_ttl_seconds", type=int)
    create.add_argument("--max-tickets-per-account", dest="max_tickets_per_account", type=int)
    create.add_argument("--max-seats-per-hold", dest="max_seats_per_hold", type=int)
    create.add_argument("--onsale-at", dest="onsale_at", help="ISO 8601 time with zone")
    create.add_argument("--starts-at", dest="starts_at", help="ISO 8601 time with zone")
    create.add_argument("--venue-name", dest="venue_name")
    create.add_argument("--time-zone", dest="time_zone",
                        help="the venue's IANA time zone, e.g. Europe/Berlin (default UTC); "
                             "the pages show times in it")
    # The waiting room (docs/edge.md); checked by parse_event_spec like POST /api/ops/events.
    create.add_argument("--queue-policy", dest="queue_policy",
                        help="fifo (default), random or passthrough")
    create.add_argument("--prequeue-at", dest="prequeue_at",
                        help="ISO 8601 time with zone, not after --onsale-at: the queue "
                             "opens (default: when the event is created)")
    create.add_argument("--admission-rate-min", dest="admission_rate_min", type=int,
                        help="new shoppers per minute, lower bound (default 60)")
    create.add_argument("--admission-rate-max", dest="admission_rate_max", type=int,
                        help="new shoppers per minute, upper bound (default 6000)")
    create.add_argument("--active-cap", dest="active_cap", type=int,
                        help="most shoppers admitted at once (default 10000)")
    create.add_argument("--pow-difficulty", dest="pow_difficulty", type=int,
                        help="proof-of-work bits required to join, 0-32 (default 0: off)")
    create.add_argument("--shard", type=int, default=None,
                        help="the shard to place it on (default: the active shard with the "
                             "fewest events on sale; docs/scaling.md)")
    create.set_defaults(func=cmd_event_create)
    listing = event_sub.add_parser("list", help="the events the directory lists, newest "
                                   "first, with their shard")
    listing.add_argument("--limit", type=int, default=100)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=cmd_event_list)
    show = event_sub.add_parser("show", help="one event: its settings, and its seats and GA "
                                "places as its shard holds them")
    show.add_argument("event_id", type=int)
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_event_show)
    move = event_sub.add_parser("move", help="move an event to another shard before its "
                                "queue opens (docs/scaling.md)")
    move.add_argument("event_id", type=int)
    move.add_argument("--shard", type=int, required=True, help="the shard to move it to")
    move.set_defaults(func=cmd_event_move)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["psp"]:
        from onsale.psp.cli import main as psp_main

        return psp_main(argv[1:])
    args = parser().parse_args(argv)
    server = args.func in (cmd_serve, cmd_dev)
    try:  # docs/operations.md#logs: JSON lines from `serve`, readable ones elsewhere; a
        # command's own output (--json) keeps stdout to itself
        configure_logs(getattr(args, "role", None) or ("dev" if args.func is cmd_dev else "cli"),
                       LogSettings.from_env(os.environ),
                       default_format="json" if args.func is cmd_serve else "text",
                       stream=sys.stdout if server else sys.stderr)
    except ConfigError as exc:
        print(f"onsale: {exc}", file=sys.stderr)
        return 2
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
