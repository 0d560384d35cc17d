# syntax=docker/dockerfile:1
# One image for every onsale role (docs/deployment.md):
#   docker run IMAGE serve --role core|worker|edge|cdc|seatmap
#   docker run IMAGE migrate | audit | event create --name N ... | psp --host 0.0.0.0 --port 8000
# Checked against pyproject.toml by tests/unit/test_dockerfile.py.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: the wheel, then a virtualenv with it and its dependencies -------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Only what the wheel is built from (.dockerignore keeps the rest out of the context).
COPY pyproject.toml README.md ./
COPY core ./core
COPY edge ./edge
COPY seatmap ./seatmap
COPY web ./web
COPY onsale ./onsale
COPY psp ./psp
# The wheel carries the package data pyproject.toml declares (migrations, SQL, Lua,
# templates, static files); installing it, not the source tree, proves it.
RUN pip wheel --no-deps --wheel-dir /dist . \
 && python -m venv /opt/onsale \
 && /opt/onsale/bin/pip install /dist/onsale-*.whl

# --- runtime: the virtualenv on a slim Python, as an unprivileged user ------------------
FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/onsale/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --system --gid 10001 onsale \
 && useradd --system --uid 10001 --gid onsale --home-dir /var/lib/onsale \
            --create-home --shell /usr/sbin/nologin onsale
COPY --from=build /opt/onsale /opt/onsale
# The working directory is writable: `onsale psp` keeps its SQLite state and `onsale dev`
# its embedded servers under ./.onsale unless ONSALE_PSP_DATA_DIR / ONSALE_DATA_DIR say.
WORKDIR /var/lib/onsale
USER 10001:10001

# `onsale serve` listens on 0.0.0.0:8000 by default, and serves /healthz, /readyz,
# /metrics and /openapi.json on its ops listener, 127.0.0.1:9000 (the public port + 1000;
# docs/operations.md#the-ops-listener): every role answers GET /healthz there without
# touching the database. For a scraper in another container set ONSALE_OPS_HOST=0.0.0.0
# and publish 9000 on a private network only; orchestrators that ignore HEALTHCHECK
# (Kubernetes) probe /healthz on 9000 themselves.
EXPOSE 8000 9000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9000/healthz', timeout=2)"]

ENTRYPOINT ["onsale"]
CMD ["serve", "--role", "core"]
