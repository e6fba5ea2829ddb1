# syntax=docker/dockerfile:1.7
#
# One image for every Chips service. The service is chosen by the command:
#
#   docker run chips                                  # the gateway (the default)
#   docker run chips python -m chips_eventlog         # any other service
#   docker run chips python -m chips_common.db.migrate
#
# Configuration is CHIPS_* environment variables only (docs/operations.md).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.13.9
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${UV_IMAGE} AS uv

# ---------------------------------------------------------------------------------------
# web: the people's app, built from web/ (its types checked against the catalogue's
# schemas); the gateway serves it at / from CHIPS_WEB_DIR (docs/adr/0033)
# ---------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS web

WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
COPY web ./
COPY docs/protocol/schemas /src/docs/protocol/schemas
COPY docs/protocol/openapi.json docs/protocol/asyncapi.json /src/docs/protocol/
RUN npm run check:types && npm run build

# ---------------------------------------------------------------------------------------
# builder: resolve from uv.lock and install every workspace package into /opt/chips
# ---------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS builder

COPY --from=uv /uv /usr/local/bin/uv

# UV_PYTHON is a version, not a path: uv finds the base image's python3.11 wherever that
# image keeps it (/usr/local/bin in the official one, /usr/bin in a Debian-built one).
ENV UV_PROJECT_ENVIRONMENT=/opt/chips \
    UV_PYTHON=3.11 \
    UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy

WORKDIR /src

# Third-party dependencies first, from the lock file alone, so that this layer is reused
# until uv.lock changes. --frozen: the members' pyproject files are not here yet. Mount
# targets are absolute: Docker accepts relative ones, Podman's builder does not.
RUN --mount=type=cache,target=/root/.cache/uv \
    --mount=type=bind,source=uv.lock,target=/src/uv.lock \
    --mount=type=bind,source=pyproject.toml,target=/src/pyproject.toml \
    uv sync --frozen --no-dev --all-packages --no-install-workspace

# Then the workspace's own packages, installed as wheels (not editable) so that the venv
# does not point back at /src.
COPY pyproject.toml uv.lock ./
COPY libs ./libs
COPY services ./services
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --all-packages --no-editable

# ---------------------------------------------------------------------------------------
# runtime: the interpreter and the venv, nothing else; runs as an unprivileged user
# ---------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

ARG CHIPS_UID=10001
RUN groupadd --system --gid ${CHIPS_UID} chips \
    && useradd --system --uid ${CHIPS_UID} --gid chips --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin chips

COPY --from=builder /opt/chips /opt/chips
COPY --from=web /src/web/dist /opt/chips-web

ENV PATH=/opt/chips/bin:${PATH} \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    CHIPS_HOST=0.0.0.0 \
    CHIPS_WEB_DIR=/opt/chips-web

# Numeric, so that Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER ${CHIPS_UID}:${CHIPS_UID}
WORKDIR /tmp

EXPOSE 8080 8091 8092 8093 8094 8095

# Alive is /healthz on the service's own port (CHIPS_PORT; the gateway's 8080 by default).
# Orchestrators use their own probes; this one serves plain `docker run`.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('CHIPS_PORT', '8080'), timeout=2)"]

CMD ["python", "-m", "chips_gateway"]
