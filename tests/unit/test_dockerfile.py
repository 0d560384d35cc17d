"""The Dockerfile and docs/deployment.md against the package they ship.

The image cannot be built on this machine (no Docker), so these tests read the
Dockerfile, .dockerignore, pyproject.toml and docs/deployment.md and check that
they agree with the code: the entry point is the package's script, every role
named exists, the runtime runs as non-root on a Python that satisfies
``requires-python``, the wheel carries the package data the app reads at
runtime, every variable the deployment page sets is one the code reads (and is
enough for each role to start), and the load balancer routes every public URL
of every role to that role.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute

from onsale.cli import parser as cli_parser
from onsale.compose import ROLES, SECRETLESS_ROLES, build_app
from onsale.environment import SECTIONS
from onsale.kernel.config import Settings
from onsale.kernel.ops_listener import OpsSettings
from onsale.kernel.settings import variable_names
from onsale.psp.cli import parser as psp_parser
from onsale.psp.config import PspConfig
from onsale.seatmap.config import SeatmapSettings

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
DOCKERIGNORE = (ROOT / ".dockerignore").read_text()
DEPLOYMENT = (ROOT / "docs" / "deployment.md").read_text()
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())


# --- a small Dockerfile reader ----------------------------------------------------------

@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, op: str) -> list[str]:
        return [args for o, args in self.instructions if o == op]


def parse_dockerfile(text: str) -> list[Stage]:
    """Stages with their instructions; continuation lines joined, comments dropped,
    ``${ARG}`` in FROM replaced by the global ARG's default."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical:
        op, _, rest = line.partition(" ")
        op, rest = op.upper(), rest.strip()
        if op == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name] = default
        elif op == "FROM":
            image = re.sub(r"\$\{(\w+)\}|\$(\w+)",
                           lambda m: args.get(m.group(1) or m.group(2), ""), rest)
            parts = image.split()
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            stages.append(Stage(parts[0], name))
        elif stages:
            stages[-1].instructions.append((op, rest))
    return stages


def exec_form(args: str) -> list[str] | None:
    """The JSON array of an exec-form instruction, else None (shell form)."""
    try:
        value = json.loads(args)
    except ValueError:
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def python_version(image: str) -> str | None:
    m = re.match(r"(?:docker\.io/)?(?:library/)?python:(\d+\.\d+)", image)
    return m.group(1) if m else None


def copy_sources(args: str) -> list[str]:
    words = [w for w in shlex.split(args) if not w.startswith("--")]
    return words[:-1]


def check_dockerfile(text: str) -> list[str]:
    """Everything wrong with a Dockerfile for this package, as sentences."""
    problems: list[str] = []
    stages = parse_dockerfile(text)
    if len(stages) < 2:
        return ["not multi-stage"]
    runtime, builds = stages[-1], stages[:-1]
    names = {s.name for s in builds if s.name}
    copied_from = [m.group(1) for args in runtime.all("COPY")
                   for m in [re.search(r"--from=(\S+)", args)] if m]
    if not any(src in names or src.isdigit() for src in copied_from):
        problems.append("the runtime stage copies nothing from a build stage")

    # Non-root: the last USER of the runtime stage.
    users = runtime.all("USER")
    user = users[-1].split(":")[0] if users else "root"
    if user in ("root", "0", ""):
        problems.append(f"the runtime stage runs as {user or 'root'}")

    # Python: every stage on one interpreter (the virtualenv is copied across) that
    # satisfies requires-python.
    requires = SpecifierSet(PYPROJECT["project"]["requires-python"])
    versions = {python_version(s.image) for s in stages}
    if None in versions or len(versions) != 1:
        problems.append(f"stages not on one python:X.Y image: {[s.image for s in stages]}")
    for v in versions - {None}:
        assert v is not None
        if v not in requires:
            problems.append(f"Python {v} does not satisfy requires-python {requires}")

    # The entry point is the package's console script; the default command parses.
    scripts: dict[str, str] = PYPROJECT["project"]["scripts"]
    entry = exec_form(runtime.all("ENTRYPOINT")[-1]) if runtime.all("ENTRYPOINT") else []
    cmd = exec_form(runtime.all("CMD")[-1]) if runtime.all("CMD") else []
    if entry is None or cmd is None:
        problems.append("ENTRYPOINT and CMD must be in exec (JSON) form")
        entry, cmd = entry or [], cmd or []
    argv = [*entry, *cmd]
    if not argv or Path(argv[0]).name not in scripts:
        problems.append(f"the executable {argv[:1]} is not one of [project.scripts] "
                        f"{sorted(scripts)}")
    else:
        try:
            cli_parser().parse_args(argv[1:])
        except SystemExit:
            problems.append(f"`{' '.join(argv)}` is refused by the onsale command")

    # The build installs the package (non-editable) and nothing from the dev extra.
    runs = " ".join(a for s in stages for a in s.all("RUN"))
    extras: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
    dev = [re.split(r"[<>=\[ ]", d)[0] for d in extras["dev"]]
    if "[dev]" in runs or any(re.search(rf"\b{re.escape(d)}\b", runs) for d in dev):
        problems.append("the image installs development dependencies")
    if re.search(r"pip install\s+(-e|--editable)\b", runs):
        problems.append("the package is installed editable (the source tree is not in the image)")
    if not re.search(r"pip (install|wheel)\b", runs):
        problems.append("no stage installs the package")

    # Every source folder of the wheel's one package (and the files its metadata needs) is
    # copied into a build stage.
    sources = {Path(src).parts[0] for s in builds for a in s.all("COPY")
               if "--from=" not in a for src in copy_sources(a)}
    wanted = set(PYPROJECT["tool"]["setuptools"]["package-dir"].values())
    wanted |= {"pyproject.toml", PYPROJECT["project"]["readme"]}
    if "." not in sources and not wanted <= sources:
        problems.append(f"the build stage does not copy {sorted(wanted - sources)}")

    # The port `onsale serve` listens on is exposed and health-checked on /healthz.
    port = cli_parser().parse_args(["serve", "--role", "core"]).port
    exposed = {p.split("/")[0] for a in runtime.all("EXPOSE") for p in a.split()}
    if str(port) not in exposed:
        problems.append(f"port {port} (onsale serve's default) is not exposed")
    health = " ".join(runtime.all("HEALTHCHECK"))
    ops = OpsSettings.from_env({}).port_for(port)  # /healthz is on the ops listener
    if health and f"127.0.0.1:{ops}/healthz" not in health:
        problems.append(f"the HEALTHCHECK does not probe 127.0.0.1:{ops}/healthz")
    return problems


def test_the_dockerfile_matches_the_package() -> None:
    assert check_dockerfile(DOCKERFILE) == []


@pytest.mark.parametrize(("old", "new", "problem"), [
    ("USER 10001:10001", "USER root", "runs as root"),
    ("USER 10001:10001", "", "runs as root"),
    ('ENTRYPOINT ["onsale"]', 'ENTRYPOINT ["onsale-server"]', "not one of [project.scripts]"),
    ('CMD ["serve", "--role", "core"]', 'CMD ["serve", "--role", "web"]', "refused by"),
    ('CMD ["serve", "--role", "core"]', "CMD onsale serve", "exec (JSON) form"),
    ("python:3.11-slim-bookworm", "python:3.10-slim", "does not satisfy requires-python"),
    ("/opt/onsale/bin/pip install /dist/onsale-*.whl",
     "/opt/onsale/bin/pip install '/src[dev]'", "development dependencies"),
    ("COPY psp ./psp\n", "", "does not copy ['psp']"),
    ("EXPOSE 8000 9000", "EXPOSE 8080", "is not exposed"),
    ("127.0.0.1:9000/healthz", "127.0.0.1:8000/healthz", "does not probe"),
    ("COPY --from=build /opt/onsale /opt/onsale", "", "copies nothing"),
])
def test_the_check_finds_a_broken_dockerfile(old: str, new: str, problem: str) -> None:
    assert old in DOCKERFILE
    problems = check_dockerfile(DOCKERFILE.replace(old, new))
    assert any(problem in p for p in problems), problems


def test_a_single_stage_is_refused() -> None:
    single = "FROM python:3.11-slim\nRUN pip install .\nUSER 1000\nENTRYPOINT [\"onsale\"]\n"
    assert check_dockerfile(single) == ["not multi-stage"]


# --- package data ---------------------------------------------------------------------

def data_files(package: str) -> list[Path]:
    """Non-Python files of a package directory, as the wheel would see them."""
    base = ROOT / package
    return sorted(p.relative_to(base) for p in base.rglob("*")
                  if p.is_file() and p.suffix not in (".py", ".pyc")
                  and "__pycache__" not in p.parts)


def unshipped(package: str, globs: list[str]) -> list[str]:
    base = ROOT / package
    shipped = {p.relative_to(base) for g in globs for p in base.glob(g) if p.is_file()}
    return [str(f) for f in data_files(package) if f not in shipped]


def folder_of(package: str, folders: dict[str, str]) -> str:
    """A package's folder: its own entry in package-dir, or its parent's plus its name
    (the data-only packages: ``onsale.core.sql.functions`` is ``core/sql/functions``)."""
    if package in folders:
        return folders[package]
    parent, _, name = package.rpartition(".")
    return f"{folder_of(parent, folders)}/{name}"


def test_every_runtime_file_is_package_data() -> None:
    package_data: dict[str, list[str]] = PYPROJECT["tool"]["setuptools"]["package-data"]
    folders: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]
    packages: list[str] = PYPROJECT["tool"]["setuptools"]["packages"]
    assert {"core", "edge", "seatmap", "web"} <= set(folders.values())
    assert set(package_data) <= set(packages)  # data of an unlisted package would be lost
    # What the app opens at runtime is there to be checked (not vacuous).
    assert data_files("core") and data_files("edge") and data_files("seatmap")
    assert any(f.suffix == ".html" for f in data_files("web"))
    assert any(f.suffix == ".js" for f in data_files("web"))
    shipped = {p.resolve() for pkg, globs in package_data.items() for g in globs
               for p in (ROOT / folder_of(pkg, folders)).glob(g) if p.is_file()}
    missing = {folder: [str(f) for f in data_files(folder)
                        if (ROOT / folder / f).resolve() not in shipped]
               for folder in folders.values()}
    assert {folder: files for folder, files in missing.items() if files} == {}


def test_every_data_folder_is_a_listed_package() -> None:
    """setuptools warns it would ignore a folder of data that is not a listed package."""
    folders: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]
    packages = set(PYPROJECT["tool"]["setuptools"]["packages"])
    for package, folder in folders.items():
        for sub in (ROOT / folder).rglob("*"):
            if sub.is_dir() and sub.name != "__pycache__" and any(
                    f.is_file() and f.suffix != ".pyc" for f in sub.iterdir()):
                dotted = package + "." + ".".join(sub.relative_to(ROOT / folder).parts)
                assert dotted in packages, dotted


def test_the_package_data_check_can_fail() -> None:
    assert unshipped("web", ["templates/*.html"])  # nested templates, static files
    assert "queue_store.lua" in unshipped("edge", [])


# --- .dockerignore ----------------------------------------------------------------------

def ignored(path: str, rules: str = DOCKERIGNORE) -> bool:
    """Docker's rule: the last matching pattern wins, a pattern matches a path or any
    of its parents, ``!`` re-includes."""
    result = False
    parts = Path(path).parts
    for raw in rules.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line[1:] if negate else line
        pattern = pattern.strip("/")
        candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        hit = any(fnmatch.fnmatchcase(c, pattern)
                  or (pattern.startswith("**/") and (
                      fnmatch.fnmatchcase(c, pattern[3:])
                      or fnmatch.fnmatchcase(c.rsplit("/", 1)[-1], pattern[3:])))
                  for c in candidates)
        if hit:
            result = not negate
    return result


def test_the_build_context_has_what_the_build_copies_and_no_more() -> None:
    stages = parse_dockerfile(DOCKERFILE)
    sources = [src for s in stages for a in s.all("COPY") if "--from=" not in a
               for src in copy_sources(a)]
    assert sources
    for src in sources:
        assert not ignored(src), f"{src} is copied but excluded by .dockerignore"
        for f in (ROOT / src).rglob("*.py") if (ROOT / src).is_dir() else []:
            rel = str(f.relative_to(ROOT))
            assert "__pycache__" in rel or not ignored(rel), rel
    for heavy in (".venv", ".git", ".onsale", "tests", "e2e", "e2e/artifacts", "bench",
                  "core/__pycache__", "onsale.egg-info"):
        assert ignored(heavy), f"{heavy} would be sent to the Docker daemon"
    assert ignored("core", "*\n") and not ignored("core", "*\n!core\n")


# --- roles named anywhere -------------------------------------------------------------

ROLE_RE = re.compile(r"--role(?:\s+|=|\"\s*,\s*\")([a-z][\w|\\-]*)")


def named_roles(text: str) -> set[str]:
    return {r for m in ROLE_RE.finditer(text) for r in m.group(1).replace("\\", "").split("|")}


def test_every_role_named_exists_and_the_deployment_runs_them_all() -> None:
    in_dockerfile, in_docs = named_roles(DOCKERFILE), named_roles(DEPLOYMENT)
    assert in_dockerfile and in_docs
    assert in_dockerfile <= set(ROLES), in_dockerfile - set(ROLES)
    assert in_docs <= set(ROLES), in_docs - set(ROLES)
    assert set(ROLES) <= in_docs, f"docs/deployment.md never runs {set(ROLES) - in_docs}"
    assert named_roles('["serve", "--role", "web"]') == {"web"}  # the pattern sees JSON too


# --- environment variables --------------------------------------------------------------

NAME_RE = re.compile(r"\b((?:ONSALE_[A-Z0-9_]*[A-Z0-9])|DATABASE_URL|REDIS_URL)\b(?![*_])")


def known_variables() -> set[str]:
    """Every variable the code reads: the declared settings (onsale.environment)."""
    return variable_names(SECTIONS)


def test_every_variable_in_the_deployment_page_is_read_by_the_code() -> None:
    known = known_variables()
    assert {"DATABASE_URL", "ONSALE_SECRET_KEY", "ONSALE_PSP_WEBHOOK_URL",
            "ONSALE_SEATMAP_TICK_MS", "ONSALE_DATA_DIR", "ONSALE_ROLE"} <= known
    used = set(NAME_RE.findall(DEPLOYMENT)) | set(NAME_RE.findall(DOCKERFILE))
    assert len(used) > 30
    assert sorted(used - known) == []
    assert NAME_RE.findall("`ONSALE_PSP_*` and ONSALE_MADE_UP") == ["ONSALE_MADE_UP"]


def compose_file() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    return doc


def service_env(service: dict[str, Any]) -> dict[str, str]:
    """The service's environment with ${NAME...} replaced by one stand-in per NAME (with
    Stripe's prefixes for the provider's keys: sk_, pk_, whsec_)."""
    env = service.get("environment") or {}
    return {k: re.sub(r"\$\{(\w+)[^}]*\}", lambda m: stand_in(m.group(1)), str(v))
            for k, v in env.items()}


def stand_in(name: str) -> str:
    value = f"{name.lower()}-0123456789abcdef"
    if "_PSP_" in name or "_STRIPE_" in name:
        for suffix, prefix in (("_SECRET_KEY", "sk_test_"), ("_PUBLISHABLE_KEY", "pk_test_"),
                               ("_WEBHOOK_SECRET", "whsec_")):
            if name.endswith(suffix):
                return prefix + value
    return value


def onsale_services() -> dict[str, tuple[list[str], dict[str, str], dict[str, Any]]]:
    out = {}
    for name, service in compose_file()["services"].items():
        if str(service.get("image", "")).startswith("onsale:"):
            out[name] = (service["command"], service_env(service), service)
    return out


def test_the_compose_example_starts_every_role_with_the_environment_it_needs() -> None:
    services = onsale_services()
    known = known_variables()
    by_role: dict[str, dict[str, str]] = {}
    for name, (command, env, service) in services.items():
        assert set(env) <= known, (name, set(env) - known)
        (psp_parser() if command[0] == "psp" else cli_parser()).parse_args(command[
            command[0] == "psp":])
        if command[:2] != ["serve", "--role"]:
            continue
        role = command[2]
        assert role in ROLES
        by_role[role] = env
        settings = Settings.from_env(env, require_secrets=role not in SECRETLESS_ROLES)
        seatmap = SeatmapSettings.from_env(env)
        build_app(role, settings, seatmap=seatmap)  # e.g. edge, cdc, seatmap need REDIS_URL
        if role == "cdc":
            assert service["deploy"]["replicas"] >= 2, "one cdc streams, another stands by"
    assert set(by_role) == set(ROLES)
    core = Settings.from_env(by_role["core"])
    assert core.redis_url and core.payments_configured, \
        "core takes payments and admits through Redis"
    for role in ("edge", "seatmap"):
        for var in ("ONSALE_SECRET_KEY", "ONSALE_ADMISSION_KEYS", "ONSALE_ADMIN_TOKEN"):
            assert by_role[role].get(var) == by_role["core"][var], (role, var)
    for var in ("ONSALE_STRIPE_API_BASE", "ONSALE_STRIPE_SECRET_KEY",
                "ONSALE_STRIPE_PUBLISHABLE_KEY", "ONSALE_STRIPE_WEBHOOK_SECRET"):
        assert by_role["worker"][var] == by_role["core"][var], var

    # The simulator: the same keys as core, webhooks to core's route, reachable (by core
    # and by browsers, which tokenize cards there) at core's ONSALE_STRIPE_API_BASE.
    (psp_name, (command, env, _)), = [(n, s) for n, s in services.items() if s[0][0] == "psp"]
    config = PspConfig.from_env(env)
    assert config.secret_key == core.stripe_secret_key
    assert config.publishable_key == core.stripe_publishable_key
    assert config.webhook_secret == core.stripe_webhook_secret
    assert env["ONSALE_PSP_WEBHOOK_URL"].endswith("/api/webhooks/payments")
    assert psp_name == "psp" and "--port" in command
    assert core.stripe_api_base == config.public_url


# --- the load balancer ------------------------------------------------------------------

def nginx_locations() -> tuple[list[tuple[str, str, str | None]], set[str]]:
    """(modifier, pattern, upstream or None for `return`) in order, and upstream names."""
    conf = "\n".join((ROOT / "deploy" / "nginx" / name).read_text()
                     for name in ("upstreams.conf", "onsale.conf"))
    upstreams = set(re.findall(r"^upstream\s+(\w+)", conf, re.M))
    locations = []
    for m in re.finditer(r"location\s+(=|~\*|~|\^~)?\s*(\S+)\s*\{(.*?)\}", conf, re.S):
        target = re.search(r"proxy_pass\s+http://(\w+)", m.group(3))
        locations.append((m.group(1) or "", m.group(2), target.group(1) if target else None))
    return locations, upstreams


def route(path: str) -> str | None:
    """nginx's choice: an exact match; else the longest prefix if ``^~``; else the first
    matching regex; else the longest prefix. None: refused (``return``) or no match."""
    locations, _ = nginx_locations()
    for mod, pattern, target in locations:
        if mod == "=" and path == pattern:
            return target
    prefixes = [(p, mod, t) for mod, p, t in locations
                if mod in ("", "^~") and path.startswith(p)]
    longest = max(prefixes, key=lambda x: len(x[0]), default=None)
    if longest and longest[1] == "^~":
        return longest[2]
    for mod, pattern, target in locations:
        if mod.startswith("~") and re.search(pattern, path, re.I if mod == "~*" else 0):
            return target
    return longest[2] if longest else None


def public_paths(routes: list[BaseRoute], prefix: str = "") -> list[str]:
    """A concrete path for every route (path parameters filled in)."""
    out = []
    for r in routes:
        if isinstance(r, Mount):
            inner = public_paths(list(r.routes), prefix + r.path) if r.routes else []
            out += inner or [prefix + r.path + "/any.file"]
        elif isinstance(r, Route | WebSocketRoute):
            out.append(re.sub(r"\{[^}]+\}", "7", prefix + r.path))
    return out


def serves(app: Any, path: str) -> bool:
    for r in app.routes:
        if isinstance(r, Mount) and path.startswith(r.path + "/"):
            return True
        if isinstance(r, Route | WebSocketRoute) and r.path_regex.match(path):
            return True
    return False


INTERNAL = ("/metrics", "/healthz", "/readyz", "/openapi.json")


def role_apps() -> dict[str, Any]:
    env = {"DATABASE_URL": "postgresql://onsale@127.0.0.1:1/onsale",
           "REDIS_URL": "redis://127.0.0.1:1/0",
           "ONSALE_SECRET_KEY": "s" * 32, "ONSALE_ADMIN_TOKEN": "a" * 32}
    settings = Settings.from_env(env)
    return {role: build_app(role, settings, seatmap=SeatmapSettings()) for role in ROLES}


def test_the_load_balancer_sends_every_public_url_to_a_role_that_serves_it() -> None:
    _, upstreams = nginx_locations()
    assert upstreams and upstreams <= set(ROLES)
    apps = role_apps()
    checked = 0
    for role, app in apps.items():
        for path in public_paths(list(app.routes)):
            if path in INTERNAL:
                continue
            target = route(path)
            assert target is not None, f"{path} ({role}) is not routed"
            assert serves(apps[target], path), f"{path} is served by {role}, routed to {target}"
            checked += 1
    assert checked > 20
    for path in ("/metrics", "/healthz", "/readyz"):
        assert route(path) is None, f"{path} is public"
    # The routes the issue names, spelled out.
    assert route("/api/events/12/queue") == "edge"
    assert route("/api/ops/events/12/queue/pause") == "edge"
    assert route("/api/events/12/seatmap") == "seatmap"
    assert route("/ws/events/12/seatmap") == "seatmap"
    assert route("/api/events/12/holds") == "core"
    assert route("/api/ops/events") == "core"
    assert route("/static/onsale.css") == "core"


def test_the_router_check_can_fail() -> None:
    apps = role_apps()
    assert not serves(apps["core"], "/api/events/7/queue")
    assert not serves(apps["edge"], "/api/events/7/holds")
    assert serves(apps["seatmap"], "/ws/events/7/seatmap")
