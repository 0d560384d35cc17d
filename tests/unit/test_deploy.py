"""deploy/: what docs/deployment.md requires of compose.yaml, checked against the code
that reads it (each role's environment through ``onsale config check``), and each
configuration checked by its own program: Patroni's ``--validate-config``, Prometheus's
``promtool``, and Grafana's published TypeScript schema (``@grafana/schema``) through
``tsc``. The routing of deploy/nginx is in test_dockerfile.py; nginx itself runs it in
tests/integration/test_nginx.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from onsale.compose import ROLES
from onsale.config_check import check
from onsale.patroni import _pg_bin
from tests.unit.test_dockerfile import compose_file, onsale_services

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PATRONI = ROOT / ".venv" / "ha" / "bin" / "patroni"
TSC = ROOT / "node_modules" / ".bin" / "tsc"
OPS_PROBE = "http://127.0.0.1:9000/healthz"


def tool(path: str | Path, how: str) -> str:
    found = shutil.which(str(path)) if not os.path.isabs(path) else (
        str(path) if os.path.exists(path) else None)
    if found is None:
        pytest.fail(f"{path} is missing: {how}")
    return found


def servers() -> dict[str, tuple[str, dict[str, str], dict[str, Any]]]:
    """The onsale services that serve a role: name -> (role, environment, service)."""
    return {name: (command[2], env, service)
            for name, (command, env, service) in onsale_services().items()
            if command[:2] == ["serve", "--role"]}


def test_every_role_runs_with_an_environment_its_check_accepts() -> None:
    by_role = {}
    for name, (role, env, _) in servers().items():
        result = check(role, env)
        assert result.ok, (name, result.error)
        assert result.warnings == [], (name, result.warnings)  # no misspelt ONSALE_* name
        by_role[role] = name
    assert set(by_role) == set(ROLES) - {"dev"}, "every role a deployment runs"


def test_every_server_is_probed_on_its_ops_port_which_is_never_published() -> None:
    for name, (_, env, service) in servers().items():
        assert (env.get("ONSALE_OPS_HOST"), env.get("ONSALE_OPS_PORT")) == ("0.0.0.0", "9000"), name
        assert "ports" not in service, f"{name} publishes a port; only the balancer does"
        probe = " ".join(service["healthcheck"]["test"])
        assert OPS_PROBE in probe, (name, probe)
    lb = compose_file()["services"]["lb"]
    assert lb["ports"] == ["443:443"]
    mounted = [v.split(":")[0] for v in lb["volumes"]]
    for path in mounted:
        if path.endswith(".conf"):
            assert (DEPLOY / path).is_file(), path
    assert {"./nginx/onsale.conf", "./nginx/upstreams.conf"} <= set(mounted)
    for role in ("core", "edge", "seatmap"):  # the balancer waits for them
        assert lb["depends_on"][role] == {"condition": "service_healthy"}


def test_the_database_is_a_patroni_cluster_reached_through_haproxy() -> None:
    services = compose_file()["services"]
    etcd = [n for n, s in services.items() if "etcd" in str(s.get("image", ""))]
    nodes = [n for n, s in services.items() if s.get("build") == "./patroni"]
    assert len(etcd) == 3 and len(nodes) == 3, (etcd, nodes)
    for node in nodes:
        env = services[node]["environment"]
        assert env["PATRONI_NAME"] == node
        assert env["PATRONI_POSTGRESQL_CONNECT_ADDRESS"] == f"{node}:5432"
        assert env["PATRONI_RESTAPI_CONNECT_ADDRESS"] == f"{node}:8008"
        assert "8008/health" in " ".join(services[node]["healthcheck"]["test"])
    for name, (_, env, _) in servers().items():
        assert re.match(r"postgresql://[^@]+@haproxy:5432/", env["DATABASE_URL"]), name
    haproxy = (DEPLOY / "haproxy" / "haproxy.cfg").read_text()
    assert "option httpchk GET /primary" in haproxy
    assert sorted(re.findall(r"server (\w+) \1:5432 check port 8008", haproxy)) == sorted(nodes)
    patroni = yaml.safe_load((DEPLOY / "patroni" / "patroni.yml").read_text())
    dcs = patroni["bootstrap"]["dcs"]
    assert dcs["synchronous_mode"] and dcs["synchronous_mode_strict"]
    assert dcs["postgresql"]["parameters"]["wal_level"] == "logical"
    cdc = [env for _, (role, env, _) in servers().items() if role == "cdc"]
    slot = cdc[0].get("ONSALE_SEATMAP_SLOT", "onsale_seatmap")
    assert dcs["slots"][slot] == {"type": "logical", "database": "onsale", "plugin": "pgoutput"}
    assert set(patroni["etcd3"]["hosts"].split(",")) == {f"{n}:2379" for n in etcd}
    register = services["patroni-register"]["command"]
    assert register[:3] == ["shard", "patroni", "1"]
    assert register[3:] == [f"http://{n}:8008" for n in nodes]


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port that accepts (Patroni's validation only checks etcd is reachable)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_patroni_accepts_its_configuration(listener: int) -> None:
    patroni = tool(PATRONI, "make ha installs Patroni into .venv/ha")
    env = {**os.environ, "PATH": f"{_pg_bin()}:{os.environ['PATH']}",
           "PATRONI_NAME": "pg2", "PATRONI_ETCD3_HOSTS": f"127.0.0.1:{listener}"}
    done = subprocess.run([patroni, "--validate-config", str(DEPLOY / "patroni/patroni.yml")],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    exe = tool("promtool", "apt-get install -y prometheus (.ci/run does)")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)


def test_promtool_accepts_the_rules_and_the_scrape_configuration() -> None:
    rules = promtool("check", "rules", str(DEPLOY / "prometheus/rules.yml"))
    assert rules.returncode == 0, rules.stdout + rules.stderr
    config = promtool("check", "config", str(DEPLOY / "prometheus/prometheus.yml"))
    assert config.returncode == 0, config.stdout + config.stderr
    scraped = yaml.safe_load((DEPLOY / "prometheus/prometheus.yml").read_text())
    names = {n for job in scraped["scrape_configs"] for sd in job["dns_sd_configs"]
             for n in sd["names"]}
    assert names == set(servers()) | {"psp"}, "every onsale server is scraped"
    psp = compose_file()["services"]["psp"]["environment"]
    assert psp["ONSALE_PSP_METRICS_PORT"] == "9000"


def dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DEPLOY / "grafana/onsale.json").read_text())
    return doc


def dashboard_queries() -> list[str]:
    return [t["expr"] for p in dashboard()["panels"] for t in p.get("targets", [])]


def test_the_dashboard_fits_grafanas_schema(tmp_path: Path) -> None:
    tsc = tool(TSC, "make test-js installs the locked TypeScript and @grafana/schema")
    schema = ROOT / "node_modules/@grafana/schema/dist/types/index.d.ts"
    assert schema.is_file(), "npm ci installs @grafana/schema (package.json)"
    (tmp_path / "dashboard.ts").write_text(
        "import type { Dashboard } from '@grafana/schema';\n"
        f"export const dashboard = {json.dumps(dashboard(), indent=1)} satisfies Dashboard;\n")
    (tmp_path / "tsconfig.json").write_text(json.dumps({
        "compilerOptions": {"strict": True, "noEmit": True, "target": "es2022",
                            "module": "esnext", "moduleResolution": "bundler",
                            "skipLibCheck": True, "types": [], "baseUrl": ".",
                            "paths": {"@grafana/schema": [str(schema)]}},
        "files": ["dashboard.ts"]}))
    done = subprocess.run([tsc, "-p", str(tmp_path / "tsconfig.json")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_dashboard_query_is_valid_promql(tmp_path: Path) -> None:
    """promtool parses each panel's query (as a recording rule; $event as any value)."""
    queries = dashboard_queries()
    assert len(queries) >= 15
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"onsale:dashboard_{i}", "expr": q.replace("$event", ".*")}
        for i, q in enumerate(queries)]}]}
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml.safe_dump(rules))
    done = promtool("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    datasources = yaml.safe_load(
        (DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text())
    uid = datasources["datasources"][0]["uid"]
    assert {p["datasource"]["uid"] for p in dashboard()["panels"] if "datasource" in p} == {uid}


def named_metrics() -> set[str]:
    """Every onsale_* metric family the rules and the dashboard name."""
    text = (DEPLOY / "prometheus/rules.yml").read_text() + "\n".join(dashboard_queries())
    return {re.sub(r"_(bucket|count|sum|total)$", "", m)
            for m in re.findall(r"\bonsale_[a-z_]+\b", text)}


def test_the_seed_figures_are_on_the_dashboard_and_alerted_on() -> None:
    named = named_metrics()
    for figure in ("onsale_event_sold", "onsale_hold_lock_wait_seconds",
                   "onsale_hold_outcomes", "onsale_sweeper_released_seats",
                   "onsale_payment_oldest_unknown_seconds", "onsale_queue_queued",
                   "onsale_queue_admitted_per_minute", "onsale_tickets_unreconciled_orders"):
        assert figure in named, figure
