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

# Only what building the binaries needs (scripts/dev.sh installs more: the
# test ensemble's JRE and ZooKeeper, chromium, clang, which a build with the
# tests off never uses). tests/deploy checks this list against the
# libraries the root CMakeLists.txt asks for.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake \
      libzookeeper-mt-dev libpoco-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*

COPY . /src
# The configure-and-build step of `scripts/dev.sh build` (the same -O2),
# without the tests and benchmarks and without debug information (the
# binaries are stripped below), only the installed programs, then an install
# into a staging prefix.
RUN cmake -S /src -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
      -DGROUPCOORD_BUILD_TESTS=OFF -DGROUPCOORD_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX=/usr > /build.configure.log \
 && cmake --build /build -j "$(nproc)" --target groupcoordd groupctl groupcoord-watch \
 && DESTDIR=/staging cmake --install /build \
 && strip --strip-unneeded /staging/usr/bin/groupcoordd /staging/usr/bin/groupctl /staging/usr/bin/groupcoord-watch

# ---- runtime stage --------------------------------------------------------
FROM debian:bookworm-slim

# Only the shared libraries groupcoordd, groupctl and groupcoord-watch link (bookworm's names):
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

# groupctl and groupcoord-watch (the first-run example) too, so that
# `docker-compose exec groupcoordd-1 groupctl ...` works with nothing built
# on the host.
COPY --from=build /staging/usr/bin/groupcoordd /staging/usr/bin/groupctl /staging/usr/bin/groupcoord-watch /usr/bin/
COPY --from=build /staging/usr/share/doc/groupcoord/groupcoordd.properties /usr/share/doc/groupcoord/

USER groupcoord:groupcoord
# 7400: the client protocol (listen.port). 7401: HTTP: the status page, /metrics,
# /health/live and /health/ready (http.port). The compose files add an
# internal listener on 7402 (internal.listen.port), off by default.
EXPOSE 7400 7401 9092
ENTRYPOINT ["/usr/bin/groupcoordd"]
