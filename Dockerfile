# groupcoordd in a container, built from Debian 12 (bookworm) packages.
#
#   docker build -t groupcoord/groupcoordd .
#   docker run --rm -p 7400:7400 -p 7401:7401 \
#       -e GROUPCOORDD_ZK_CONNECT=zk1:2181,zk2:2181,zk3:2181 groupcoord/groupcoordd
#
# Configuration goes through GROUPCOORDD_<KEY> environment variables (see
# `groupcoordd --help`), or a properties file mounted into the container and
# named by GROUPCOORDD_CONFIG. docker-compose.yml runs two of these in front
# of a three-node ZooKeeper ensemble.
#
# tests/deploy checks this file against the built binary: the runtime
# packages below must provide every shared library groupcoordd and groupctl
# link, and EXPOSE must match groupcoordd's default ports.

# ---- build stage ----------------------------------------------------------
FROM debian:bookworm AS build

# The build dependencies are exactly those of scripts/dev.sh: it is copied on
# its own first, so this layer is rebuilt only when its package list changes.
# (Its list also names what the test ensemble needs, a JRE and ZooKeeper;
# they stay in this stage and never reach the runtime image.)
COPY scripts/dev.sh /src/scripts/dev.sh
RUN /src/scripts/dev.sh setup && rm -rf /var/lib/apt/lists/*

COPY . /src
# The same configure-and-build step as `scripts/dev.sh build`, without the
# tests and benchmarks, then an install into a staging prefix.
RUN BUILD_DIR=/build BUILD_TYPE=RelWithDebInfo \
      CMAKE_ARGS="-DGROUPCOORD_BUILD_TESTS=OFF -DGROUPCOORD_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX=/usr" \
      /src/scripts/dev.sh build \
 && DESTDIR=/staging cmake --install /build \
 && strip --strip-unneeded /staging/usr/bin/groupcoordd /staging/usr/bin/groupctl

# ---- runtime stage --------------------------------------------------------
FROM debian:bookworm-slim

# Only the shared libraries groupcoordd and groupctl link (bookworm's names):
# the ZooKeeper C client, Poco (Util and Foundation), spdlog
# with fmt, OpenSSL (client TLS and credential hashes), and the C++
# runtime. bash (already in the base image) serves the healthcheck through
# /dev/tcp, so no curl is needed.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libzookeeper-mt2 \
      libpocofoundation80 libpocoutil80 \
      libspdlog1.10 libfmt9 \
      libssl3 \
      libstdc++6 libgcc-s1 libc6 \
 && rm -rf /var/lib/apt/lists/*

# A dedicated unprivileged user; the server needs no file system writes (it
# logs to standard error and keeps its state in ZooKeeper).
RUN groupadd --system --gid 7400 groupcoord \
 && useradd --system --uid 7400 --gid groupcoord --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin groupcoord

COPY --from=build /staging/usr/bin/groupcoordd /staging/usr/bin/groupctl /usr/bin/
COPY --from=build /staging/usr/share/doc/groupcoord/groupcoordd.properties /usr/share/doc/groupcoord/

USER groupcoord:groupcoord
# 7400: the client protocol (listen.port). 7401: HTTP: the status page, /metrics,
# /health/live and /health/ready (http.port).
EXPOSE 7400 7401
ENTRYPOINT ["/usr/bin/groupcoordd"]
