# syntax=docker/dockerfile:1
# Volley in a container: `docker build -t volley .` or `docker compose up --build` (see docker-compose.yml).
# Three stages: the UI (Node), the binary with the UI embedded (Go + cgo for SQLite), a slim runtime.

# ---- 1. UI: frontend/dist ------------------------------------------------------------------------
FROM node:20-bookworm-slim AS ui
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend/ ./
RUN npm run build

# ---- 2. binary: cgo (mattn/go-sqlite3), UI embedded via frontend/embed.go ------------------------
FROM golang:1.26-bookworm AS build
ENV CGO_ENABLED=1 GOFLAGS=-buildvcs=false
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
COPY --from=ui /src/frontend/dist/ ./frontend/dist/
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/volley ./backend/cmd/volley

# ---- 3. runtime: same Debian release as the build stage, so the cgo binary's glibc matches -------
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin volley \
 && mkdir -p /data /join && chown volley:volley /data /join
COPY --from=build /out/volley /usr/local/bin/volley
USER volley
WORKDIR /data
# A named volume inherits /data's owner (uid 10001); a bind mount must be writable by that uid.
# /join: where docker-compose.yml's volley-join volume carries the join token to the agents.
VOLUME ["/data"]
EXPOSE 8080
# No HTTP client in the slim image: bash's /dev/tcp asks /api/health and wants "200" in the status line.
# It assumes the port of the default CMD (8080); adjust it if you change --addr.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /api/health HTTP/1.0\\r\\nHost: localhost:8080\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["volley"]
# 0.0.0.0 inside the container; docker-compose.yml publishes it on the host's loopback only.
# The built-in demo target stays on the container's own loopback (127.0.0.1:8090).
# A non-loopback bind needs users: while the database has none, the first admin ("admin") is made
# from the secret /run/secrets/volley_admin_password (docker-compose.yml fills it from
# VOLLEY_ADMIN_PASSWORD; with plain docker run, mount a file there, or run `volley user add`
# against the volume first). Without either, the server refuses to start and says so.
CMD ["serve", "--addr", "0.0.0.0:8080", "--db", "/data/volley.db", "--demo-target", "127.0.0.1:8090", \
     "--admin-password-file", "/run/secrets/volley_admin_password"]
