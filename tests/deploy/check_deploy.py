#!/usr/bin/python3
"""Checks that the deployment files still tell the truth about groupcoordd.

The truth is the built binaries (`groupcoordd --help` lists every option with
its key, environment variable and default; groupcoordd, groupctl and
groupcoord-watch link the shared libraries the image must carry), the CMake
files (the libraries the build finds) and the native topology the
integration tests use (a three-node ZooKeeper 3.8 ensemble, two servers).
Compose files are read as `docker-compose config` prints them in an
environment without GROUPCOORD* and COMPOSE_* variables, i.e. with every
default. Servers are the services whose image is groupcoord/groupcoordd:*,
ZooKeeper nodes those whose image is zookeeper. Checked against it:

  docker-compose.yml (with docker-compose.groupcoordd.yml, which it extends)
      `docker-compose config` accepts it. Three zookeeper:3.8 nodes that list
      each other, with healthchecks whose four-letter words are whitelisted,
      each mounting named volumes of its own at /data, /datalog and /logs
      (declared in the top-level `volumes:`), which the image declares as
      VOLUMEs. Two servers that wait for every node; exactly one of them
      builds the image (the source tree, its Dockerfile), the other runs the
      same image and depends on the one that builds it. Every GROUPCOORDD_
      variable is an option, and groupcoordd accepts each server's
      environment; the connect string names all three nodes;
      zk.connect.wait.ms is 0. The ports agree with EXPOSE and the defaults;
      each server advertises the host port it is published on; every
      published port binds 127.0.0.1 (authentication is off in these files).
      Each server has an internal listener (internal.listen.port) that is not
      published and is not its listen port, advertised under the service's
      name; GROUPCTL_BOOTSTRAP names the server's own internal address first
      and only servers' internal addresses. The open-file limit (ulimits
      nofile, soft and hard) covers max.connections plus 64.
  packaging/groupcoord-external/docker-compose.yml
      In a folder of its own: its compose project name is not the source
      tree's, so it never replaces docker-compose.yml's servers. Accepted
      without GROUPCOORD_ZK_CONNECT (so that `ps` and `down` work); then the
      servers' zk.connect is empty, and groupcoordd refuses that at start,
      naming zk.connect (while it accepts the rest of that environment). With
      the variable: the same two servers as docker-compose.yml (apart from
      GROUPCOORDD_ZK_*), no ZooKeeper services, and the servers' zk.connect
      is the variable.
  packaging/groupcoord-external/network.yml (given after the external file)
      Accepted without GROUPCOORD_NETWORK; with it, the default network is
      the one it names, external (the project neither makes nor removes it).
  Dockerfile, .dockerignore
      Debian bookworm stages. The build stage installs with
      --no-install-recommends the -dev package of every library the CMake
      files of a build without tests find (find_package, find_library) or the
      sources include (fmt), build-essential and cmake, and nothing else (not
      scripts/dev.sh's chromium, clang, JRE, ZooKeeper server, Docker or
      GoogleTest); it configures with every GROUPCOORD_BUILD_* option (tests,
      benchmarks) off. A non-root runtime user; groupcoordd as entrypoint;
      the runtime stage copies every checked binary, and installs exactly
      the packages providing the shared libraries they link.
  packaging/                   the example properties file names every option
                               and no other, each with its real default, and
                               groupcoordd accepts it; the systemd unit has its
                               settings, installs with `cmake --install` and
                               passes `systemd-analyze verify`.

It also breaks copies of the compose files and the Dockerfile on purpose and
requires the checks to notice, so a check that can no longer fail is itself a
failure (an unbroken copy must pass, or the breakages prove nothing).

Usage: check_deploy.py --source-dir S --build-dir B --groupcoordd PATH
                       [--groupctl PATH] [--watch PATH]
"""

import argparse
import concurrent.futures
import fnmatch
import ipaddress
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

try:
    import yaml
except ImportError:  # pragma: no cover - reported as a failure below
    yaml = None


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = []
        self.notes = []

    def check(self, name, run):
        """run: a callable returning a list of problems; none means the check passed."""
        started = time.monotonic()
        try:
            problems = run()
        except Exception:  # a check that crashes has failed, and says where
            problems = [f"the check itself crashed:\n{traceback.format_exc()}"]
        took = f"({time.monotonic() - started:.1f} s)"
        if problems:
            self.failed.append(name)
            print(f"FAIL {name} {took}")
            for p in problems:
                print(f"       - {p}")
        else:
            self.passed += 1
            print(f"ok   {name} {took}")
        sys.stdout.flush()

    def note(self, text):
        self.notes.append(text)
        print(f"note {text}")


# --------------------------------------------------------------------------
# What groupcoordd knows


HELP_LINE = re.compile(r"^\s+default: (.*?)\s{4}env: (\S+)\s{4}key: (\S+)\s*$")


def read_options(groupcoordd):
    """key -> {"env": ..., "default": ...} from `groupcoordd --help`."""
    out = subprocess.run([groupcoordd, "--help"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise RuntimeError(f"groupcoordd --help exited {out.returncode}: {out.stderr.strip()}")
    options = {}
    for line in out.stdout.splitlines():
        m = HELP_LINE.match(line)
        if m:
            default = "" if m.group(1) == "(empty)" else m.group(1)
            options[m.group(3)] = {"env": m.group(2), "default": default}
    required = ("zk.connect", "listen.port", "internal.listen.port", "max.connections")
    if len(options) < 10 or any(k not in options for k in required):
        raise RuntimeError(f"could not read the options ({', '.join(required)} among them) from "
                           "groupcoordd --help:\n" + out.stdout)
    general = re.findall(r"^\s+(?:-\w, )?--([a-z-]+)", out.stdout, re.M)
    return options, general


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONFIG_LINE = re.compile(r"\bconfig ([a-z0-9][a-z0-9.]*)=(.*)$")


# Time (tests/README.md, "Time in tests"). groupcoordd logs its configuration, or refuses it and
# exits, milliseconds after it starts: no bound the design gives. The waits for that end as soon
# as it has (they poll its output), and are 5 s with the scheduling allowance on top (20 s, or
# GROUPCOORD_TEST_ALLOWANCE_MS, as tests/support/Timing.h reads it), so that a start a busy
# machine slowed is not taken for a server that never logs its configuration or never exits.
def scheduling_allowance():
    text = os.environ.get("GROUPCOORD_TEST_ALLOWANCE_MS", "")
    return int(text) / 1000.0 if text.isdigit() else 20.0


START_WAIT = 5.0 + scheduling_allowance()  # for its whole configuration in its log, or its exit
EXIT_WAIT = 5.0 + scheduling_allowance()   # for its exit once its output has ended


def bound_key(key):
    """Whether `key` names a port groupcoordd binds (advertised ones it only names)."""
    return key.endswith(".port") and "advertised" not in key and key != "listen.port"


def start_server(groupcoordd, options, args, env_extra, wait=START_WAIT, override_connect=True):
    """Starts groupcoordd with `args` and `env_extra` plus overrides that keep
    it on loopback and on free ports (and, with override_connect, away from
    any real ensemble), for at most `wait` seconds: until it has logged its
    whole effective configuration, or exits.

    Returns (effective configuration read from its log, its output,
    its exit status or None when it was still running and got killed)."""
    overrides = ["--listen-address=127.0.0.1", "--listen-port=0"]
    if override_connect:
        # Nothing listens there: the server logs its configuration, then
        # waits for ZooKeeper, and is killed meanwhile.
        overrides.append(f"--zk-connect=127.0.0.1:{free_port()}")
    for key in options:
        # Any other listening port (the HTTP endpoint, the internal one): a free one.
        if bound_key(key):
            overrides.append(f"--{key.replace('.', '-')}={free_port()}")
        if key.endswith(".address") and key != "listen.address":
            overrides.append(f"--{key.replace('.', '-')}=127.0.0.1")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPCOORDD_")}
    env.update(env_extra)
    proc = subprocess.Popen([groupcoordd] + args + overrides, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    lines = []
    config = {}
    deadline = time.monotonic() + wait
    fd = proc.stdout.fileno()
    buf = b""
    status = None
    eof = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            chunk = os.read(fd, 65536) if ready else b""
            if ready and not chunk:
                eof = True  # it exited, or is about to
                break
            buf += chunk
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                line = raw.decode("utf-8", "replace")
                lines.append(line)
                m = CONFIG_LINE.search(line)
                if m and m.group(1) in options:
                    config[m.group(1)] = m.group(2)
            if set(config) >= set(options):
                break
    finally:
        if eof:
            try:
                proc.wait(timeout=EXIT_WAIT)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            # It blocks SIGTERM until it serves; this one never will.
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        else:
            status = proc.returncode
        rest = proc.stdout.read()
        proc.stdout.close()
    buf += rest or b""
    if buf:
        lines.append(buf.decode("utf-8", "replace"))
    return config, "\n".join(lines), status


def effective_config(groupcoordd, options, args, env_extra, wait=START_WAIT):
    """The effective configuration groupcoordd logs at start with `args` and
    `env_extra` (see start_server), then kills it.

    Returns (config dict or None when it refused to start, its output)."""
    config, output, _ = start_server(groupcoordd, options, args, env_extra, wait)
    if set(config) >= set(options):
        return config, output
    return None, output


def expected_config(options, settings, overrides_cli):
    """What groupcoordd should log: defaults, then `settings`."""
    expected = {k: v["default"] for k, v in options.items()}
    expected.update(settings)
    for key in list(expected):
        if key in overrides_cli:
            expected.pop(key)
    return expected


OVERRIDDEN = {"listen.address", "listen.port", "zk.connect"}


def overridden_keys(options):
    keys = set(OVERRIDDEN)
    for key in options:
        if bound_key(key) or (key.endswith(".address") and key != "listen.address"):
            keys.add(key)
    return keys


def compare_config(options, got, want):
    problems = []
    for key, value in want.items():
        shown = got.get(key)
        if shown == "****" and value:
            continue  # a secret, masked in the log
        if shown != value:
            problems.append(f"{key}: groupcoordd uses {shown!r}, expected {value!r}")
    return problems


def options_key(options, env_name):
    for key, v in options.items():
        if v["env"] == env_name:
            return key
    return None


# --------------------------------------------------------------------------
# Compose


MAIN_COMPOSE = "docker-compose.yml"
SERVERS_COMPOSE = "docker-compose.groupcoordd.yml"
# In a folder of its own: Compose names a project after the folder of its
# (first) file, so this one is groupcoord-external, not the source tree's.
EXTERNAL_COMPOSE = os.path.join("packaging", "groupcoord-external", "docker-compose.yml")
# Given after it: its servers on the Docker network of an ensemble that runs
# in containers (GROUPCOORD_NETWORK), which it neither makes nor removes.
NETWORK_COMPOSE = os.path.join("packaging", "groupcoord-external", "network.yml")
# The files a broken copy of the deployment needs (see check_mutations).
DEPLOY_FILES = (MAIN_COMPOSE, SERVERS_COMPOSE, EXTERNAL_COMPOSE, NETWORK_COMPOSE, "Dockerfile", ".dockerignore")

SERVER_IMAGE = "groupcoord/groupcoordd:*"
# Volumes the official ZooKeeper image declares (VOLUME): left unnamed, each
# `docker-compose down` leaves them behind as anonymous volumes.
ZK_VOLUMES = ("/data", "/datalog", "/logs")
# The file descriptors a server needs beyond its client connections
# (listeners, HTTP, ZooKeeper, logs).
FD_HEADROOM = 64


def clean_env(env_extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GROUPCOORD") and not k.startswith("COMPOSE_")}
    env.update(env_extra or {})
    return env


def compose_config(src, filename, env_extra=None, more=()):
    """`docker-compose -f FILE [-f MORE ...] config` in a clean environment:
    (rc, parsed or None, output)."""
    files = []
    for name in (filename,) + tuple(more):
        files += ["-f", os.path.join(src, name)]
    out = subprocess.run(["docker-compose"] + files + ["config"],
                         capture_output=True, text=True, env=clean_env(env_extra), cwd=src, timeout=120)
    parsed = None
    if out.returncode == 0:
        parsed = yaml.safe_load(out.stdout)
    return out.returncode, parsed, (out.stdout + out.stderr).strip()


def project_name(project_dir):
    """The project name docker-compose (1.x) gives the files of `project_dir`:
    COMPOSE_PROJECT_NAME from the folder's .env, else the folder's name,
    lower case, with only [-_a-z0-9] kept."""
    name = os.path.basename(os.path.realpath(project_dir))
    env_file = os.path.join(project_dir, ".env")
    if os.path.isfile(env_file):
        with open(env_file) as f:
            for line in f:
                key, sep, value = line.strip().partition("=")
                if sep and key.strip() == "COMPOSE_PROJECT_NAME" and value.strip():
                    name = value.strip().strip("'\"")
    return re.sub(r"[^-_a-z0-9]", "", name.lower())


def env_of(service):
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) if "=" in e else (e, "") for e in env)
    return {k: ("" if v is None else str(v)) for k, v in env.items()}


def port_specs(service):
    """[(host address or None for every address, host port or None, container port)]

    Short syntax as `docker-compose config` prints it ("127.0.0.1:7400:7400/tcp",
    "7400:7400", "7400", "[::1]:7400:7400") or the long one (a mapping)."""
    specs = []
    for p in service.get("ports") or []:
        if isinstance(p, dict):
            pub = p.get("published")
            specs.append((p.get("host_ip") or None, int(pub) if pub not in (None, "") else None,
                          int(p["target"])))
            continue
        text = str(p).split("/")[0]
        ip = None
        if text.startswith("["):
            ip, _, text = text[1:].partition("]:")
        parts = text.split(":")
        if len(parts) == 3:
            ip, parts = parts[0], parts[1:]
        elif len(parts) > 3:
            raise ValueError(f"cannot read the port mapping {p!r}")
        pub = int(parts[0]) if len(parts) == 2 and parts[0] else None
        specs.append((ip or None, pub, int(parts[-1])))
    return specs


def port_pairs(service):
    """[(published host port or None, container port)]"""
    return [(pub, target) for _, pub, target in port_specs(service)]


def is_loopback(address):
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


def check_published(services):
    """Every published port has a fixed host port, on loopback, used once."""
    problems = []
    published = {}
    for name, s in sorted(services.items()):
        for ip, pub, target in port_specs(s):
            if ip is None or not is_loopback(ip):
                problems.append(f"{name}: container port {target} is published on {ip or 'every address'}, "
                                "not on 127.0.0.1: nothing here authenticates, so it must not be reachable "
                                "from other machines unless GROUPCOORD_PUBLISH_ADDRESS says so")
            if pub is None:
                problems.append(f"{name}: container port {target} has no fixed host port")
            elif pub in published:
                problems.append(f"{name}: host port {pub} is also published by {published[pub]}")
            else:
                published[pub] = name
    return problems


def depends_of(service):
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {d: {} for d in deps}
    return {k: (v or {}) for k, v in deps.items()}


def check_depends_exist(services):
    problems = []
    for name, s in sorted(services.items()):
        for dep in sorted(depends_of(s)):
            if dep not in services:
                problems.append(f"{name}: depends on {dep}, which this file does not run")
    return problems


def healthcheck_text(service):
    test = (service.get("healthcheck") or {}).get("test")
    if isinstance(test, list):
        return " ".join(str(t) for t in test)
    return str(test or "")


def image_repository(image):
    """'zookeeper' of 'zookeeper:3.8', 'host:5000/x/zookeeper' of 'host:5000/x/zookeeper:3.8'"""
    image = str(image or "")
    head, _, last = image.rpartition("/")
    return (head + "/" if head else "") + last.split(":")[0]


def split_services(parsed):
    services = parsed.get("services") or {}
    zk = {n: s for n, s in services.items() if image_repository(s.get("image")).endswith("zookeeper")}
    servers = {n: s for n, s in services.items() if fnmatch.fnmatchcase(str(s.get("image", "")), SERVER_IMAGE)}
    return services, zk, servers


ZOO_SERVER = re.compile(r"server\.(\d+)=([^:\s]+):(\d+):(\d+)(?:[^;\s]*)(?:;(?:([^:\s]+):)?(\d+))?")


def volume_mounts(service):
    """{container path: (type, source or None)} of a service's volumes."""
    mounts = {}
    for v in service.get("volumes") or []:
        if isinstance(v, dict):
            source, target, kind = v.get("source"), str(v.get("target", "")), v.get("type", "volume")
        else:
            parts = str(v).split(":")
            if len(parts) == 1:
                source, target = None, parts[0]
            else:
                source, target = parts[0], parts[1]
            kind = "bind" if source and source[0] in "/.~" else "volume"
        mounts[target.rstrip("/") or "/"] = (kind, source or None)
    return mounts


def check_ensemble(zk, parsed):
    """Problems with the ZooKeeper services; returns (problems, {(host, client port)})."""
    problems = []
    nodes = set()
    if len(zk) != 3:
        problems.append(f"expected three ZooKeeper services, found {len(zk)}: {sorted(zk)}")
    ids = {}
    declared = set((parsed.get("volumes") or {}).keys())
    volume_users = {}
    for name, s in sorted(zk.items()):
        image = str(s.get("image", ""))
        last = image.rsplit("/", 1)[-1]
        tag = last.split(":", 1)[1] if ":" in last else "latest"
        if not re.fullmatch(r"3\.8(\.\d+)*", tag):
            problems.append(f"{name}: image {image} is not of the ZooKeeper 3.8 line (the one Debian 12 ships "
                            "and the tests run)")
        env = env_of(s)
        my_id = env.get("ZOO_MY_ID", "")
        if not my_id.isdigit():
            problems.append(f"{name}: ZOO_MY_ID is {my_id!r}, not a number")
        else:
            ids[int(my_id)] = (name, s.get("hostname") or name)
        if "healthcheck" not in s:
            problems.append(f"{name}: no healthcheck (the servers wait for service_healthy)")
        else:
            words = re.findall(r"echo\s+([a-z]{4})\b", healthcheck_text(s))
            allowed = env.get("ZOO_4LW_COMMANDS_WHITELIST", "srvr")
            allowed_set = {w.strip() for w in allowed.split(",")}
            for w in words:
                if "*" not in allowed_set and w not in allowed_set:
                    problems.append(f"{name}: the healthcheck sends '{w}', which ZOO_4LW_COMMANDS_WHITELIST "
                                    f"({allowed!r}) does not allow")
        mounts = volume_mounts(s)
        for path in ZK_VOLUMES:
            kind, volume = mounts.get(path, (None, None))
            if kind != "volume" or not volume:
                problems.append(f"{name}: no named volume at {path} (the image declares it a VOLUME: unnamed, "
                                "every `docker-compose down` leaves an anonymous volume behind, and `up` starts "
                                "from an empty one)")
                continue
            if volume not in declared:
                problems.append(f"{name}: volume {volume} (at {path}) is not declared in the top-level volumes:")
            volume_users.setdefault(volume, []).append(f"{name}:{path}")
    for volume, users in sorted(volume_users.items()):
        if len(users) > 1:
            problems.append(f"volume {volume} is mounted by more than one node or path: {', '.join(users)}")
    if sorted(ids) != [1, 2, 3]:
        problems.append(f"ZOO_MY_ID values are {sorted(ids)}, expected 1, 2, 3")
    listed = None
    for name, s in sorted(zk.items()):
        entries = {int(m.group(1)): (m.group(2), m.group(6)) for m in ZOO_SERVER.finditer(env_of(s).get("ZOO_SERVERS", ""))}
        if listed is None:
            listed = entries
        elif entries != listed:
            problems.append(f"{name}: ZOO_SERVERS differs from the other nodes'")
    listed = listed or {}
    if sorted(listed) != [1, 2, 3]:
        problems.append(f"ZOO_SERVERS lists server ids {sorted(listed)}, expected 1, 2, 3")
    for sid, (host, client_port) in listed.items():
        if sid in ids and host not in (ids[sid][0], ids[sid][1]):
            problems.append(f"ZOO_SERVERS names {host} as server.{sid}, but that is service {ids[sid][0]}")
        nodes.add((host, int(client_port or 2181)))
    return problems, nodes


def check_image_build(services, servers, src):
    """The image is built once, by one server, from the source tree; every
    server runs it, and those that do not build it wait for the one that does."""
    problems = []
    builders = sorted(n for n, s in servers.items() if "build" in s)
    for name in sorted(n for n, s in services.items() if "build" in s and n not in servers):
        problems.append(f"{name}: builds an image named {services[name].get('image')!r}, not "
                        f"{SERVER_IMAGE} (only the groupcoordd image is built)")
    if len(builders) != 1:
        problems.append(f"{len(builders)} servers build the image ({', '.join(builders) or 'none'}): exactly one "
                        "must (Compose builds an image once per service that has build:, and a server that "
                        "does not build must find it built)")
        return problems
    builder = builders[0]
    s = servers[builder]
    build = s.get("build") or {}
    context = build.get("context") if isinstance(build, dict) else build
    if os.path.realpath(str(context)) != os.path.realpath(src):
        problems.append(f"{builder}: built from {context}, not from the source tree")
    if isinstance(build, dict) and build.get("dockerfile", "Dockerfile") != "Dockerfile":
        problems.append(f"{builder}: built from {build.get('dockerfile')}, not the Dockerfile")
    image = s.get("image")
    for name, other in sorted(servers.items()):
        if other.get("image") != image:
            problems.append(f"{name}: runs {other.get('image')}, not the image {builder} builds ({image})")
        if name != builder and builder not in depends_of(other):
            problems.append(f"{name}: does not depend on {builder}, which builds its image: Compose could "
                            f"create {name} before the image exists")
    return problems


def int_or_none(text):
    try:
        return int(str(text))
    except ValueError:
        return None


def check_servers(services, servers, options, expose, src, require_deps_on=None):
    """Problems with the groupcoordd services (shared by both compose files)."""
    problems = []
    if len(servers) != 2:
        problems.append(f"expected two groupcoordd services (image {SERVER_IMAGE}), found {len(servers)}: "
                        f"{sorted(servers)}")
    problems += check_image_build(services, servers, src)
    env_names = {v["env"]: k for k, v in options.items()}
    listen_default = int(options["listen.port"]["default"])
    http_default = int(options["http.port"]["default"]) if "http.port" in options else None
    server_ids = {}
    internal_ports = {}
    for name, s in sorted(servers.items()):
        if require_deps_on is not None:
            deps = depends_of(s)
            for zk_name in sorted(require_deps_on):
                cond = deps.get(zk_name, {}).get("condition")
                if cond != "service_healthy":
                    problems.append(f"{name}: does not wait for {zk_name} to be healthy "
                                    f"(depends_on condition: {cond})")
        env = env_of(s)
        for var in sorted(env):
            if var.startswith("GROUPCOORDD_") and var not in env_names and var != "GROUPCOORDD_CONFIG":
                problems.append(f"{name}: {var} is no option of groupcoordd (see groupcoordd --help)")
        sid = env.get("GROUPCOORDD_SERVER_ID", options["server.id"]["default"])
        if sid in server_ids:
            problems.append(f"{name}: server id {sid} is also {server_ids[sid]}'s")
        server_ids[sid] = name
        listen = int(env.get("GROUPCOORDD_LISTEN_PORT", listen_default))
        if listen != listen_default:
            problems.append(f"{name}: listens on {listen} in its container, not on the default {listen_default}")
        if http_default is None:
            http = 7401
        else:
            http = int(env.get("GROUPCOORDD_HTTP_PORT", http_default))
        pairs = port_pairs(s)
        targets = {t for _, t in pairs}
        expected = {listen, http}
        kafka = env.get("GROUPCOORDD_KAFKA_LISTEN_PORT")
        if kafka is not None and int(kafka) > 0:
            expected.add(int(kafka))
            kafka_pub = [pub for pub, t in pairs if t == int(kafka)]
            kafka_adv = env.get("GROUPCOORDD_KAFKA_ADVERTISED_PORT", "")
            if not kafka_pub or kafka_adv != str(kafka_pub[0]):
                problems.append(f"{name}: advertises Kafka port {kafka_adv or '(the bound port)'} but its Kafka port "
                                f"is published on host port {kafka_pub[0] if kafka_pub else '(none)'}: Kafka "
                                "clients would be sent elsewhere")
        if targets != expected:
            problems.append(f"{name}: publishes container ports {sorted(targets)}, expected {sorted(expected)} "
                            "(protocol, HTTP and the Kafka port when it is on)")
        for t in sorted(targets - expose):
            problems.append(f"{name}: container port {t} is not in the Dockerfile's EXPOSE {sorted(expose)}")
        proto_pub = [pub for pub, t in pairs if t == listen]
        adv_port = env.get("GROUPCOORDD_ADVERTISED_PORT", "")
        if not proto_pub or adv_port != str(proto_pub[0]):
            problems.append(f"{name}: advertises port {adv_port or '(the bound port)'} but is published on host "
                            f"port {proto_pub[0] if proto_pub else '(none)'}: clients would be sent elsewhere")
        if not env.get("GROUPCOORDD_ADVERTISED_HOST"):
            problems.append(f"{name}: no GROUPCOORDD_ADVERTISED_HOST: it would advertise its container's "
                            "hostname, which clients on the host cannot resolve")
        hc = healthcheck_text(s)
        if "/health/ready" not in hc or str(http) not in hc:
            problems.append(f"{name}: its healthcheck does not ask /health/ready on the HTTP port {http}: {hc!r}")

        # The internal listener: what peers and clients inside the compose
        # network connect to, and are told about.
        internal_text = env.get("GROUPCOORDD_INTERNAL_LISTEN_PORT", options["internal.listen.port"]["default"])
        internal = int_or_none(internal_text)
        if internal is None or internal <= 0:
            problems.append(f"{name}: GROUPCOORDD_INTERNAL_LISTEN_PORT is {internal_text!r}: no fixed internal "
                            "listener, so the servers cannot reach each other inside the compose network "
                            "(the advertised address is the host's)")
        else:
            internal_ports[name] = internal
            if internal in (listen, http):
                problems.append(f"{name}: its internal port {internal} is also its "
                                f"{'listen' if internal == listen else 'HTTP'} port")
            if internal in targets:
                problems.append(f"{name}: publishes its internal port {internal}: it names the servers by their "
                                "service names, which only the compose network resolves")
            adv_internal = env.get("GROUPCOORDD_INTERNAL_ADVERTISED_PORT", "0")
            if adv_internal not in ("0", str(internal)):
                problems.append(f"{name}: GROUPCOORDD_INTERNAL_ADVERTISED_PORT is {adv_internal}, but peers reach "
                                f"the internal port {internal} directly (it is not published)")
        adv_internal_host = env.get("GROUPCOORDD_INTERNAL_ADVERTISED_HOST", "")
        if adv_internal_host not in (name, s.get("hostname")):
            problems.append(f"{name}: GROUPCOORDD_INTERNAL_ADVERTISED_HOST is {adv_internal_host!r}, not its "
                            "service name (or hostname:), which is how its peers reach it in the compose network")

        wait = env.get("GROUPCOORDD_ZK_CONNECT_WAIT_MS")
        if wait != "0":
            problems.append(f"{name}: GROUPCOORDD_ZK_CONNECT_WAIT_MS is {wait!r}, not \"0\": started before its "
                            "ensemble is reachable, it would exit instead of waiting for it")

        max_conn = env.get("GROUPCOORDD_MAX_CONNECTIONS", options["max.connections"]["default"])
        need = int(max_conn) + FD_HEADROOM
        nofile = (s.get("ulimits") or {}).get("nofile")
        if isinstance(nofile, dict):
            limits = {"soft": nofile.get("soft"), "hard": nofile.get("hard")}
        else:
            limits = {"soft": nofile, "hard": nofile}
        for which, value in limits.items():
            if value is None or int_or_none(value) is None or int(value) < need:
                problems.append(f"{name}: ulimits nofile {which} is {value}, less than max.connections ({max_conn}) "
                                f"+ {FD_HEADROOM} = {need}")

    # groupctl inside a container asks GROUPCTL_BOOTSTRAP: its own server's
    # internal address first, and only servers' internal addresses.
    hosts = {}
    for name, s in servers.items():
        hosts[name] = name
        if s.get("hostname"):
            hosts[str(s["hostname"])] = name
    for name, s in sorted(servers.items()):
        bootstrap = env_of(s).get("GROUPCTL_BOOTSTRAP", "")
        entries = [e.strip() for e in bootstrap.split(",") if e.strip()]
        if not entries:
            problems.append(f"{name}: no GROUPCTL_BOOTSTRAP: groupctl in its container would ask 127.0.0.1:"
                            f"{listen_default}, whose answers name the host's addresses")
            continue
        for i, entry in enumerate(entries):
            host, _, port = entry.rpartition(":")
            target = hosts.get(host)
            if target is None or target not in internal_ports or port != str(internal_ports[target]):
                problems.append(f"{name}: GROUPCTL_BOOTSTRAP names {entry}, which is no server's internal address "
                                "(service name:internal port)")
            elif i == 0 and target != name:
                problems.append(f"{name}: GROUPCTL_BOOTSTRAP names {entry} first, not its own server's internal "
                                "address")
    return problems


def parse_connect(value):
    nodes = set()
    for part in value.split("/")[0].split(","):
        host, _, port = part.strip().rpartition(":")
        nodes.add((host, int(port) if port.isdigit() else -1))
    return nodes


def check_main_compose(src, options, groupcoordd, run_server=True):
    """All problems of docker-compose.yml; [] when it is fine."""
    rc, parsed, output = compose_config(src, MAIN_COMPOSE)
    if rc != 0:
        return [f"docker-compose config failed (exit {rc}): {output}"]
    problems = []
    services, zk, servers = split_services(parsed)
    problems += check_depends_exist(services)
    zk_problems, nodes = check_ensemble(zk, parsed)
    problems += zk_problems
    expose, _ = dockerfile_expose(src)
    problems += check_servers(services, servers, options, expose, src, require_deps_on=set(zk))
    problems += check_published(services)
    for name, s in sorted(servers.items()):
        env = env_of(s)
        connect = env.get("GROUPCOORDD_ZK_CONNECT", "")
        if parse_connect(connect) != nodes:
            problems.append(f"{name}: GROUPCOORDD_ZK_CONNECT={connect!r} does not name exactly the three nodes "
                            f"{sorted(f'{h}:{p}' for h, p in nodes)}")
        if run_server:
            # The server itself must accept every value (an unknown variable is only a warning to it).
            config, out = effective_config(groupcoordd, options, [], env)
            if config is None:
                problems.append(f"{name}: groupcoordd refuses its environment:\n{out}")
            else:
                want = {options_key(options, var): value for var, value in env.items()
                        if options_key(options, var)}
                want = {k: v for k, v in want.items() if k not in overridden_keys(options)}
                problems += [f"{name}: {p}" for p in compare_config(options, config, want)]
    return problems


# What may differ between the external file's servers and docker-compose.yml's.
EXTERNAL_MAY_DIFFER = {"environment", "depends_on", "extra_hosts"}


def check_external_compose(src, options, groupcoordd, run_server=True, filename=EXTERNAL_COMPOSE):
    problems = []
    if not os.path.isfile(os.path.join(src, filename)):
        return [f"{filename} is missing"]
    folder = os.path.dirname(os.path.join(src, filename))
    own, tree = project_name(folder), project_name(src)
    if os.path.realpath(folder) == os.path.realpath(src) or own == tree:
        problems.append(f"its compose project is named {own!r}, as docker-compose.yml's ({tree!r}): "
                        "`docker-compose up` of one would replace the other's servers; it belongs in a folder "
                        "of its own")

    # Without GROUPCOORD_ZK_CONNECT: accepted (ps, logs, down work), and the
    # servers refuse to start.
    rc, parsed, output = compose_config(src, filename)
    if rc != 0:
        problems.append(f"docker-compose config fails without GROUPCOORD_ZK_CONNECT (exit {rc}), so `ps`, "
                        f"`logs` and `down` fail too: {output}")
    else:
        _, _, servers = split_services(parsed)
        if not servers:
            problems.append("without GROUPCOORD_ZK_CONNECT it runs no groupcoordd service")
        for name, s in sorted(servers.items()):
            env = env_of(s)
            connect = env.get("GROUPCOORDD_ZK_CONNECT")
            if connect != "":
                problems.append(f"{name}: without GROUPCOORD_ZK_CONNECT, GROUPCOORDD_ZK_CONNECT is {connect!r}, "
                                "not empty: the servers would start against an ensemble nobody named")
                continue
            if not run_server:
                continue
            # Given a connect string, the rest of that environment is accepted ...
            config, out = effective_config(groupcoordd, options, [], env)
            if config is None:
                problems.append(f"{name}: groupcoordd refuses its environment even with a connect string:\n{out}")
                continue
            # ... and with the empty one the server exits at once, saying why.
            _, out, status = run_server_briefly(groupcoordd, options, env)
            if status is None:
                problems.append(f"{name}: groupcoordd with an empty zk.connect kept running:\n{out}")
            elif status == 0 or "zk.connect" not in out:
                problems.append(f"{name}: groupcoordd with an empty zk.connect exited {status} without naming "
                                f"zk.connect:\n{out}")

    # With it: the same servers as docker-compose.yml, no ensemble of its own.
    connect = "zk-a.example:2181,zk-b.example:2181,zk-c.example:2181"
    rc, parsed, output = compose_config(src, filename, {"GROUPCOORD_ZK_CONNECT": connect})
    if rc != 0:
        return problems + [f"docker-compose config with GROUPCOORD_ZK_CONNECT failed (exit {rc}): {output}"]
    services, zk, servers = split_services(parsed)
    if zk:
        problems.append(f"it runs ZooKeeper services of its own: {sorted(zk)}")
    problems += check_depends_exist(services)
    expose, _ = dockerfile_expose(src)
    problems += check_servers(services, servers, options, expose, src)
    problems += check_published(services)
    for name, s in sorted(servers.items()):
        got = env_of(s).get("GROUPCOORDD_ZK_CONNECT")
        if got != connect:
            problems.append(f"{name}: GROUPCOORDD_ZK_CONNECT is {got!r}, not GROUPCOORD_ZK_CONNECT's {connect!r}")
    problems += check_network_file(src, filename, connect)
    rc, main, _ = compose_config(src, MAIN_COMPOSE)
    if rc == 0:
        _, _, main_servers = split_services(main)
        if set(servers) != set(main_servers):
            problems.append(f"services {sorted(servers)} differ from docker-compose.yml's {sorted(main_servers)}")
        for name in sorted(set(servers) & set(main_servers)):
            a, b = servers[name], main_servers[name]
            for key in sorted((set(a) | set(b)) - EXTERNAL_MAY_DIFFER):
                if a.get(key) != b.get(key):
                    problems.append(f"{name}: its {key} differs from docker-compose.yml's {name}'s")
            env_a = {k: v for k, v in env_of(a).items() if not k.startswith("GROUPCOORDD_ZK_")}
            env_b = {k: v for k, v in env_of(b).items() if not k.startswith("GROUPCOORDD_ZK_")}
            for var in sorted(set(env_a) | set(env_b)):
                if env_a.get(var) != env_b.get(var):
                    problems.append(f"{name}: {var} is {env_a.get(var)!r}, docker-compose.yml's {name} has "
                                    f"{env_b.get(var)!r}")
            deps_a = {d for d in depends_of(a) if d in servers}
            deps_b = {d for d in depends_of(b) if d in main_servers}
            if deps_a != deps_b:
                problems.append(f"{name}: depends on the servers {sorted(deps_a)}, docker-compose.yml's {name} on "
                                f"{sorted(deps_b)}")
    return problems


def check_network_file(src, filename, connect):
    """network.yml after the external file: the servers on the network
    GROUPCOORD_NETWORK names, external (never made or removed by this
    project), and `config` (so `ps` and `down`) working without it."""
    problems = []
    if not os.path.isfile(os.path.join(src, NETWORK_COMPOSE)):
        return [f"{NETWORK_COMPOSE} is missing"]
    rc, _, output = compose_config(src, filename, more=(NETWORK_COMPOSE,))
    if rc != 0:
        problems.append(f"with {NETWORK_COMPOSE}, docker-compose config fails without GROUPCOORD_NETWORK "
                        f"(exit {rc}), so `ps` and `down` fail too: {output}")
    wanted = "ensemble-project_default"
    rc, parsed, output = compose_config(src, filename, {"GROUPCOORD_ZK_CONNECT": connect,
                                                        "GROUPCOORD_NETWORK": wanted}, more=(NETWORK_COMPOSE,))
    if rc != 0:
        return problems + [f"with {NETWORK_COMPOSE} and GROUPCOORD_NETWORK, docker-compose config fails "
                           f"(exit {rc}): {output}"]
    networks = parsed.get("networks") or {}
    default = networks.get("default") or {}
    if default.get("name") != wanted:
        problems.append(f"with {NETWORK_COMPOSE}, the default network is named {default.get('name')!r}, not "
                        f"GROUPCOORD_NETWORK's {wanted!r}")
    if default.get("external") not in (True, {"name": wanted}):
        problems.append(f"with {NETWORK_COMPOSE}, the network {wanted!r} is not external: `up` would make it "
                        "and `down` try to remove it from under its own project")
    _, _, servers = split_services(parsed)
    for name, svc in sorted(servers.items()):
        nets = svc.get("networks")
        if nets not in (None, {}, ["default"], {"default": None}) and "default" not in (nets or {}):
            problems.append(f"{name}: with {NETWORK_COMPOSE} it is on {sorted(nets)}, not the joined network")
    return problems


def run_server_briefly(groupcoordd, options, env, wait=START_WAIT):
    """groupcoordd with `env` as it stands (its zk.connect too), on loopback
    and free ports: (config, output, exit status or None if still running)."""
    return start_server(groupcoordd, options, [], env, wait, override_connect=False)


# --------------------------------------------------------------------------
# Dockerfile


def dockerfile_instructions(src):
    """[(stage index, INSTRUCTION, arguments)] with continuation lines joined."""
    with open(os.path.join(src, "Dockerfile")) as f:
        text = f.read()
    logical = []
    current = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        logical.append(current.strip())
        current = ""
    out = []
    stage = -1
    for line in logical:
        instr, _, args = line.partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            stage += 1
        out.append((stage, instr, args.strip()))
    return out


def dockerfile_expose(src):
    ports = set()
    last = max(s for s, _, _ in dockerfile_instructions(src))
    for stage, instr, args in dockerfile_instructions(src):
        if instr == "EXPOSE" and stage == last:
            ports |= {int(p.split("/")[0]) for p in args.split()}
    return ports, last


def apt_installs(args):
    """[(options, packages)] of every `apt-get install` in a RUN's arguments."""
    installs = []
    for command in re.split(r"&&|;|\|\|", args):
        words = command.split()
        if ("apt-get" in words or "apt" in words) and "install" in words:
            after = words[words.index("install") + 1:]
            opts = [w for w in after if w.startswith("-")]
            pkgs = [w.split("=")[0] for w in after if not w.startswith("-")]
            installs.append((opts, pkgs))
    return installs


def apt_packages(args):
    return [p for _, pkgs in apt_installs(args) for p in pkgs]


def stage_packages(instructions):
    """The packages every RUN of a stage's [(instruction, arguments)] installs."""
    pkgs = set()
    for instr, args in instructions:
        if instr == "RUN":
            pkgs |= set(apt_packages(args))
    return pkgs


def dpkg_owner(path):
    """The Debian package that installed `path` (the path itself, else what it
    links to), or None."""
    for candidate in (path, os.path.realpath(path)):
        try:
            out = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True, timeout=60)
        except FileNotFoundError:
            return None
        if out.returncode == 0:
            return out.stdout.split(":")[0].split(",")[0].strip()
    return None


def needed_packages(binary):
    """{package: [sonames]} for the shared libraries `binary` links directly."""
    dyn = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    where = dict(re.findall(r"^\s*(\S+) => (\S+)", ldd, re.M))
    pkgs = {}
    for soname in needed:
        path = where.get(soname)
        if not path or path == "not":
            raise RuntimeError(f"{binary} needs {soname}, which ldd cannot find")
        owner = subprocess.run(["dpkg", "-S", os.path.realpath(path)], capture_output=True, text=True)
        if owner.returncode != 0:
            owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
        if owner.returncode != 0:
            raise RuntimeError(f"{soname} ({path}) belongs to no Debian package: the image could not install it")
        pkg = owner.stdout.split(":")[0].strip()
        pkgs.setdefault(pkg, []).append(soname)
    return pkgs


def runtime_needs(binaries):
    """({package: {sonames}} the binaries link, problems)"""
    needed = {}
    problems = []
    for binary in binaries:
        try:
            for pkg, sonames in needed_packages(binary).items():
                needed.setdefault(pkg, set()).update(sonames)
        except (RuntimeError, subprocess.CalledProcessError, FileNotFoundError) as e:
            problems.append(f"cannot tell which packages {os.path.basename(binary)} needs: {e}")
    return needed, problems


# The Debian package with the headers, the CMake package and the link-time
# library of each library groupcoord's CMake files find (by find_package
# name, or find_library name) or its sources include; None: part of the
# toolchain.
DEV_PACKAGES = {
    "Threads": None,
    "Poco": "libpoco-dev",
    "OpenSSL": "libssl-dev",
    "spdlog": "libspdlog-dev",
    "fmt": "libfmt-dev",
    "nlohmann_json": "nlohmann-json3-dev",
    "zookeeper_mt": "libzookeeper-mt-dev",
}
# Libraries by the folder of their headers in `#include <folder/...>`: fmt is
# found by spdlog's CMake package, not by groupcoord's files, yet the sources
# use it directly.
INCLUDED_LIBRARIES = {
    "fmt": "fmt",
    "spdlog": "spdlog",
    "Poco": "Poco",
    "nlohmann": "nlohmann_json",
    "openssl": "OpenSSL",
    "zookeeper": "zookeeper_mt",
}
# Where a configured build directory (CMakeCache.txt) records a library found
# by a find module rather than a CMake package (<name>_DIR).
CACHE_ENTRIES = {"OpenSSL": "OPENSSL_SSL_LIBRARY"}
# The compiler, make and binutils (strip), and cmake: all the build needs
# besides the libraries.
BUILD_TOOLS = {"build-essential", "cmake"}
# What scripts/dev.sh installs for the tests, the test ensemble and the
# development machine, and a build with tests and benchmarks off never uses.
NOT_FOR_THE_BUILD = ("chromium*", "clang*", "default-jre*", "default-jdk*", "openjdk-*", "zookeeper",
                     "zookeeperd", "docker*", "googletest", "libgtest-dev", "libgmock-dev", "google-mock")
# Folders a configure with an option off does not read.
OPTIONAL_DIRS = {"tests": "GROUPCOORD_BUILD_TESTS", "bench": "GROUPCOORD_BUILD_BENCH"}


def cmake_finds(src):
    """The libraries the CMake files of a configure with tests and benchmarks
    off find, and the folders it reads: ({name: cache entry}, [folder])."""
    finds = {}
    folders = []
    todo = [""]
    while todo:
        rel = todo.pop(0)
        path = os.path.join(src, rel, "CMakeLists.txt")
        if rel in folders or not os.path.isfile(path):
            continue
        folders.append(rel)
        with open(path) as f:
            text = "\n".join(line.split("#", 1)[0] for line in f.read().splitlines())
        # A folder that returns early (python/ returns unless the tests are
        # built) finds nothing after that in such a build.
        early = re.search(r"^\s*return\s*\(\s*\)", text, re.M)
        if early:
            text = text[:early.start()]
        loops = {m.group(1): m.group(2).split() for m in re.finditer(r"foreach\s*\(\s*(\w+)\s+([^)]*)\)", text)}
        for m in re.finditer(r"add_subdirectory\s*\(\s*([^\s)]+)", text):
            var = re.fullmatch(r"\$\{(\w+)\}", m.group(1))
            for sub in (loops.get(var.group(1), []) if var else [m.group(1)]):
                sub = os.path.normpath(os.path.join(rel, sub))
                if "$" not in sub and sub.split(os.sep)[0] not in OPTIONAL_DIRS:
                    todo.append(sub)
        for m in re.finditer(r"find_package\s*\(\s*(\w+)", text):
            finds.setdefault(m.group(1), CACHE_ENTRIES.get(m.group(1), f"{m.group(1)}_DIR"))
        for m in re.finditer(r"find_library\s*\(\s*(\w+)\s+(?:NAMES\s+)?([\w.+-]+)", text):
            finds.setdefault(m.group(2), m.group(1))
    return finds, folders


def included_libraries(src, folders):
    """Libraries (INCLUDED_LIBRARIES) the C++ sources in `folders` include."""
    found = set()
    include = re.compile(r"^\s*#\s*include\s*<(\w+)/", re.M)
    for rel in folders:
        if not rel:
            continue  # the top folder holds no sources; its subfolders are listed on their own
        for root, _, files in os.walk(os.path.join(src, rel)):
            for name in files:
                if name.endswith((".h", ".hpp", ".cpp", ".cc")):
                    with open(os.path.join(root, name), errors="replace") as f:
                        for m in include.finditer(f.read()):
                            if m.group(1) in INCLUDED_LIBRARIES:
                                found.add(INCLUDED_LIBRARIES[m.group(1)])
    return found


def read_cmake_cache(build):
    cache = {}
    path = os.path.join(build, "CMakeCache.txt")
    if os.path.isfile(path):
        with open(path) as f:
            for line in f:
                m = re.match(r"^([A-Za-z0-9_]+):[A-Z]+=(.*)$", line.rstrip("\n"))
                if m:
                    cache[m.group(1)] = m.group(2)
    return cache


def build_dependencies(src, build):
    """({library: (dev package, cache entry)}, problems): what the build stage
    must install, and where DEV_PACKAGES disagrees with this machine (dpkg on
    what the configured build directory found)."""
    finds, folders = cmake_finds(src)
    for lib in sorted(included_libraries(src, folders)):
        finds.setdefault(lib, CACHE_ENTRIES.get(lib, f"{lib}_DIR"))
    problems = []
    wanted = {}
    cache = read_cmake_cache(build)
    for lib, entry in sorted(finds.items()):
        if lib not in DEV_PACKAGES:
            problems.append(f"the build finds {lib}, whose Debian -dev package check_deploy.py does not know: add "
                            "it to DEV_PACKAGES")
            continue
        pkg = DEV_PACKAGES[lib]
        if pkg is None:
            continue
        wanted[lib] = pkg
        where = cache.get(entry, "")
        if where and not where.endswith("-NOTFOUND") and os.path.exists(where):
            owner = dpkg_owner(where)
            if owner is not None and owner != pkg:
                problems.append(f"{lib}: this machine's build found it in {where}, which {owner} installs, not "
                                f"{pkg} (DEV_PACKAGES)")
    return wanted, problems


def check_dockerfile(docker_dir, src, build, options, needed, binaries):
    """The Dockerfile in `docker_dir`, against the CMake files of `src`, the
    build directory `build` and the runtime packages `needed` by `binaries`."""
    problems = []
    instrs = dockerfile_instructions(docker_dir)
    froms = [args.split()[0] for _, instr, args in instrs if instr == "FROM"]
    if len(froms) < 2:
        problems.append(f"not a multi-stage build: FROM {froms}")
    for base in froms:
        if base not in ("debian:bookworm", "debian:bookworm-slim"):
            problems.append(f"stage FROM {base}: expected debian:bookworm or debian:bookworm-slim")
    last = max(s for s, _, _ in instrs)

    for stage, instr, args in instrs:
        if instr == "RUN":
            for opts, pkgs in apt_installs(args):
                if "--no-install-recommends" not in opts:
                    problems.append(f"{'the runtime' if stage == last else 'a build'} stage installs "
                                    f"{' '.join(pkgs)} without --no-install-recommends")

    # The build stage: exactly what building needs, tests and benchmarks off.
    build_stage = [(i, a) for s, i, a in instrs if s != last]
    for i, a in build_stage:
        if "dev.sh" in a:
            problems.append(f"the build stage uses scripts/dev.sh ({i} {a[:60]}...), which installs what only the "
                            "tests and a development machine need")
    build_pkgs = stage_packages(build_stage)
    wanted, dep_problems = build_dependencies(src, build)
    problems += dep_problems
    for lib, pkg in sorted(wanted.items()):
        if pkg not in build_pkgs:
            problems.append(f"the build stage does not install {pkg}, which the build needs for {lib}")
    for pkg in sorted(BUILD_TOOLS - build_pkgs):
        problems.append(f"the build stage does not install {pkg}")
    for pkg in sorted(build_pkgs - set(wanted.values()) - BUILD_TOOLS):
        if any(fnmatch.fnmatchcase(pkg, p) for p in NOT_FOR_THE_BUILD):
            problems.append(f"the build stage installs {pkg}, which only the tests or a development machine use")
        else:
            problems.append(f"the build stage installs {pkg}, which the build does not need")
    with open(os.path.join(src, "CMakeLists.txt")) as f:
        on_by_default = re.findall(r"option\s*\(\s*(GROUPCOORD_BUILD_\w+)\s+\"[^\"]*\"\s+ON\s*\)", f.read())
    configure = " ".join(a for i, a in build_stage if i == "RUN" and re.search(r"\bcmake\b", a))
    if not configure:
        problems.append("the build stage never runs cmake")
    for opt in on_by_default:
        if not re.search(rf"-D\s*{opt}(?::BOOL)?=(OFF|0|NO|FALSE)\b", configure, re.I):
            problems.append(f"the build stage does not configure with -D{opt}=OFF: it would build (and "
                            "find the libraries of) what the image never ships")

    # The runtime stage.
    runtime = [(i, a) for s, i, a in instrs if s == last]
    users = [a for i, a in runtime if i == "USER"]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problems.append(f"the runtime stage runs as {users[-1] if users else 'root'}: expected a non-root USER")
    entry = [a for i, a in runtime if i == "ENTRYPOINT"]
    if not entry or "groupcoordd" not in entry[-1]:
        problems.append(f"ENTRYPOINT is {entry[-1] if entry else '(none)'}, not groupcoordd")
    expose, _ = dockerfile_expose(docker_dir)
    want = {int(options["listen.port"]["default"])}
    if "http.port" in options:
        want.add(int(options["http.port"]["default"]))
    else:
        want.add(7401)
    if "kafka.listen.port" in options:
        # Off by default; 9092 is the Kafka port the compose files turn on.
        want.add(9092)
    if expose != want:
        problems.append(f"EXPOSE {sorted(expose)}, but groupcoordd's default ports are {sorted(want)} "
                        "(listen.port, http.port, and 9092 for kafka.listen.port)")
    runtime_pkgs = stage_packages(runtime)
    base_libs = {"libc6", "libgcc-s1", "libstdc++6"}
    for pkg in sorted(set(needed) - runtime_pkgs):
        problems.append(f"the runtime stage does not install {pkg}, which provides {sorted(needed[pkg])}")
    for pkg in sorted(runtime_pkgs - set(needed) - base_libs):
        problems.append(f"the runtime stage installs {pkg}, which no installed binary links")
    copies = [a.split() for i, a in runtime if i == "COPY" and "--from=" in a]
    if not copies:
        problems.append("the runtime stage copies nothing from the build stage")
    copied = {os.path.basename(w) for words in copies for w in words[:-1] if not w.startswith("--")}
    for binary in binaries:
        if os.path.basename(binary) not in copied:
            problems.append(f"the runtime stage does not copy {os.path.basename(binary)} from the build stage, "
                            "yet its libraries are checked as if it did")
    return problems


def check_dockerignore(src):
    path = os.path.join(src, ".dockerignore")
    if not os.path.exists(path):
        return [".dockerignore is missing"]
    with open(path) as f:
        patterns = [l.strip().rstrip("/") for l in f if l.strip() and not l.startswith("#")]
    problems = []
    for name in (".git", "build", "build-deploy", "build-asan"):
        if not any(fnmatch.fnmatchcase(name, p) for p in patterns):
            problems.append(f".dockerignore does not keep {name}/ out of the build context")
    for name in ("server", "scripts", "CMakeLists.txt", "packaging"):
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            problems.append(f".dockerignore keeps {name} out, but the build needs it")
    return problems


# --------------------------------------------------------------------------
# packaging/


# Active `key=value` (or `key: value`, as the server reads), or commented out
# as `#key=value` with no space after the '#'.
SETTING = re.compile(r"^(#?)([a-z][a-z0-9]*(?:\.[a-z0-9]+)+)\s*([=:])\s*(.*?)\s*$")


def parse_properties(path):
    """[(key, value, active, documented default or None, line number)]"""
    with open(path) as f:
        lines = f.read().splitlines()
    settings = []
    for n, line in enumerate(lines):
        m = SETTING.match(line.strip())
        if not m or (m.group(1) == "#" and m.group(3) != "="):
            continue
        default = None
        i = n - 1
        while i >= 0 and lines[i].strip().startswith("#") and not SETTING.match(lines[i].strip()):
            d = re.match(r"^#\s*default:\s*(.*?)\s*$", lines[i].strip())
            if d:
                default = "" if d.group(1) == "(empty)" else d.group(1)
            i -= 1
        settings.append((m.group(2), m.group(4), m.group(1) != "#", default, n + 1))
    return settings


def check_properties(src, options):
    path = os.path.join(src, "packaging", "groupcoordd.properties")
    settings = parse_properties(path)
    problems = []
    seen = {}
    for key, value, active, default, line in settings:
        if key in seen:
            problems.append(f"line {line}: {key} again (first on line {seen[key]})")
        seen[key] = line
        if key not in options:
            problems.append(f"line {line}: {key} is no option of groupcoordd (see groupcoordd --help)")
            continue
        real = options[key]["default"]
        if default is None:
            problems.append(f"line {line}: {key} has no '# default: ...' line above it")
        elif default != real:
            problems.append(f"line {line}: {key} is documented with default {default!r}, groupcoordd's is {real!r}")
        if not active and value != real:
            problems.append(f"line {line}: commented-out {key}={value} is not its default {real!r}")
    for key in sorted(set(options) - set(seen)):
        problems.append(f"{key} (default {options[key]['default'] or '(empty)'!s}) is not in "
                        f"packaging/groupcoordd.properties: document it there, with its default")
    return problems


def check_properties_accepted(src, options, groupcoordd, work):
    path = os.path.join(src, "packaging", "groupcoordd.properties")
    settings = parse_properties(path)
    problems = []
    skip = overridden_keys(options)
    # 1. The file as shipped.
    config, out = effective_config(groupcoordd, options, [f"--config={path}"], {})
    if config is None:
        return [f"groupcoordd refuses the file:\n{out}"]
    want = expected_config(options, {k: v for k, v, active, _, _ in settings if active and k in options}, skip)
    problems += compare_config(options, config, want)
    # 2. Every commented-out setting switched on: every documented default is
    # a value groupcoordd takes, and takes as that default.
    every = os.path.join(work, "every-setting.properties")
    with open(path) as f, open(every, "w") as g:
        for line in f:
            m = SETTING.match(line.strip())
            g.write(line.lstrip("#") if m and m.group(1) == "#" else line)
    config, out = effective_config(groupcoordd, options, [f"--config={every}"], {})
    if config is None:
        problems.append(f"groupcoordd refuses the file with every setting switched on:\n{out}")
    else:
        want = expected_config(options, {k: v for k, v, _, _, _ in settings if k in options}, skip)
        problems += compare_config(options, config, want)
    # 3. The acceptance check can fail: a file with an unknown key is refused.
    bad = os.path.join(work, "unknown-key.properties")
    shutil.copy(path, bad)
    with open(bad, "a") as g:
        g.write("\nno.such.option=1\n")
    config, out = effective_config(groupcoordd, options, [f"--config={bad}"], {})
    if config is not None or "no.such.option" not in out:
        problems.append(f"groupcoordd did not refuse a file with an unknown key, so acceptance proves nothing:\n{out}")
    return problems


def parse_unit(path):
    sections = {}
    section = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or line.startswith(";"):
                continue
            if line.startswith("[") and line.endswith("]"):
                section = sections.setdefault(line[1:-1], {})
                continue
            key, _, value = line.partition("=")
            section.setdefault(key.strip(), []).append(value.strip())
    return sections


def seconds(text):
    m = re.fullmatch(r"(\d+)\s*(s|sec|min|m)?", text)
    if not m:
        return None
    return int(m.group(1)) * (60 if m.group(2) in ("min", "m") else 1)


def check_unit_settings(src, options):
    unit = parse_unit(os.path.join(src, "packaging", "groupcoordd.service"))
    svc = unit.get("Service", {})
    problems = []

    def one(key):
        values = svc.get(key, [])
        return values[-1] if values else None

    expect = {"Type": "simple", "Restart": "on-failure", "NoNewPrivileges": "yes"}
    for key, value in expect.items():
        if one(key) != value:
            problems.append(f"[Service] {key}={one(key)}, expected {value}")
    if one("ProtectSystem") not in ("strict", "full", "yes"):
        problems.append(f"[Service] ProtectSystem={one('ProtectSystem')}: expected strict (or full)")
    user = one("User")
    if not user or user in ("root", "0"):
        problems.append(f"[Service] User={user}: expected a dedicated user")
    else:
        with open(os.path.join(src, "packaging", "groupcoord.sysusers")) as f:
            if not re.search(rf"^u\s+{re.escape(user)}\s", f.read(), re.M):
                problems.append(f"packaging/groupcoord.sysusers does not create the user {user}")
    stop = seconds(one("TimeoutStopSec") or "")
    grace_ms = int(options.get("shutdown.grace.ms", {"default": "5000"})["default"])
    if stop is None or not grace_ms / 1000 < stop <= 300:
        problems.append(f"[Service] TimeoutStopSec={one('TimeoutStopSec')}: expected more than shutdown.grace.ms "
                        f"({grace_ms} ms) and at most 5 minutes")
    exec_start = one("ExecStart") or ""
    words = exec_start.split()
    if not words or words[0] != "/usr/bin/groupcoordd":
        problems.append(f"ExecStart={exec_start}: expected /usr/bin/groupcoordd (install rewrites it to the prefix)")
    if "--config=/etc/groupcoord/groupcoordd.properties" not in words:
        problems.append(f"ExecStart={exec_start}: expected --config=/etc/groupcoord/groupcoordd.properties")
    if "multi-user.target" not in " ".join(unit.get("Install", {}).get("WantedBy", [])):
        problems.append("[Install] WantedBy=multi-user.target is missing")
    return problems


def check_install(src, build, groupcoordd, work, report):
    """cmake --install of the deploy component into a scratch prefix, then systemd-analyze verify."""
    prefix = os.path.join(work, "prefix")
    out = subprocess.run(["cmake", "--install", build, "--prefix", prefix, "--component", "deploy"],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        return [f"cmake --install --component deploy failed: {out.stdout}{out.stderr}"]
    problems = []
    files = {
        "unit": "lib/systemd/system/groupcoordd.service",
        "sysusers": "lib/sysusers.d/groupcoord.conf",
        "doc": "share/doc/groupcoord/groupcoordd.properties",
        "etc": "etc/groupcoord/groupcoordd.properties",
    }
    for what, rel in files.items():
        if not os.path.isfile(os.path.join(prefix, rel)):
            problems.append(f"not installed: {rel}")
    if problems:
        return problems
    with open(os.path.join(src, "packaging", "groupcoordd.properties")) as f:
        example = f.read()
    for rel in (files["doc"], files["etc"]):
        with open(os.path.join(prefix, rel)) as f:
            if f.read() != example:
                problems.append(f"{rel} differs from packaging/groupcoordd.properties")
    unit_path = os.path.join(prefix, files["unit"])
    exec_start = (parse_unit(unit_path).get("Service", {}).get("ExecStart") or [""])[-1]
    want = f"{prefix}/bin/groupcoordd --config={prefix}/etc/groupcoord/groupcoordd.properties"
    if exec_start != want:
        problems.append(f"installed ExecStart={exec_start}, expected {want}")
    # A second install keeps an operator's configuration.
    etc = os.path.join(prefix, files["etc"])
    with open(etc, "a") as f:
        f.write("server.id=7\n")
    out = subprocess.run(["cmake", "--install", build, "--prefix", prefix, "--component", "deploy"],
                         capture_output=True, text=True, timeout=120)
    with open(etc) as f:
        if out.returncode != 0 or not f.read().endswith("server.id=7\n"):
            problems.append("a second cmake --install overwrote etc/groupcoord/groupcoordd.properties")

    # systemd-analyze verify, where it works in this container.
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        report.note("systemd-analyze is not installed: `systemd-analyze verify` skipped")
        return problems
    os.makedirs(os.path.join(prefix, "bin"), exist_ok=True)
    shutil.copy(groupcoordd, os.path.join(prefix, "bin", "groupcoordd"))
    probe_dir = os.path.join(work, "probe")
    os.makedirs(probe_dir, exist_ok=True)
    probe = os.path.join(probe_dir, "groupcoord-probe.service")
    with open(probe, "w") as f:
        f.write("[Unit]\nDescription=probe\n[Service]\nType=simple\nExecStart=/bin/true\n"
                "[Install]\nWantedBy=multi-user.target\n")
    ok = subprocess.run([analyze, "verify", probe], capture_output=True, text=True, timeout=60)
    if ok.returncode != 0 or ok.stderr.strip():
        report.note("systemd-analyze verify does not work in this container (a trivial unit fails: "
                    f"{(ok.stdout + ok.stderr).strip()[:300]}): that sub-check skipped")
        return problems
    res = subprocess.run([analyze, "verify", unit_path], capture_output=True, text=True, timeout=60)
    text = (res.stdout + res.stderr).strip()
    if res.returncode != 0 or text:
        problems.append(f"systemd-analyze verify {files['unit']} (exit {res.returncode}): {text}")
    return problems



# --------------------------------------------------------------------------
# The checks must be able to fail.


PUBLISH = "${GROUPCOORD_PUBLISH_ADDRESS:-127.0.0.1}"

# (file, text in it, its replacement (every occurrence), what that breaks[,
# where the broken external compose file goes instead of EXTERNAL_COMPOSE]).
MUTATIONS = [
    # docker-compose.groupcoordd.yml: the servers.
    (SERVERS_COMPOSE, 'GROUPCOORDD_ADVERTISED_PORT: "7410"', 'GROUPCOORDD_ADVERTIZED_PORT: "7410"',
     "a misspelt GROUPCOORDD_ variable"),
    (SERVERS_COMPOSE, f'"{PUBLISH}:7410:7400"', f'"{PUBLISH}:7400:7400"', "two servers on one host port"),
    (SERVERS_COMPOSE, f'"{PUBLISH}:7410:7400"', '"0.0.0.0:7410:7400"', "a server port published on 0.0.0.0"),
    (SERVERS_COMPOSE, f'"{PUBLISH}:7401:7401"', '"7401:7401"', "a server port published on every address"),
    (SERVERS_COMPOSE, "GROUPCOORD_PUBLISH_ADDRESS:-127.0.0.1}", "GROUPCOORD_PUBLISH_ADDRESS:-0.0.0.0}",
     "every address as the default publish address"),
    (SERVERS_COMPOSE, f'      - "{PUBLISH}:7411:7401"   # HTTP\n',
     f'      - "{PUBLISH}:7411:7401"   # HTTP\n      - "{PUBLISH}:7412:7402"\n', "the internal port published"),
    (SERVERS_COMPOSE, 'GROUPCOORDD_INTERNAL_LISTEN_PORT: "7402"', 'GROUPCOORDD_INTERNAL_LISTEN_PORT: "-1"',
     "no internal listener"),
    (SERVERS_COMPOSE, 'GROUPCOORDD_INTERNAL_LISTEN_PORT: "7402"', 'GROUPCOORDD_INTERNAL_LISTEN_PORT: "7400"',
     "the internal port on the listen port"),
    (SERVERS_COMPOSE, "GROUPCOORDD_INTERNAL_ADVERTISED_HOST: groupcoordd-2",
     "GROUPCOORDD_INTERNAL_ADVERTISED_HOST: 127.0.0.1", "an internal address other than the service name"),
    (SERVERS_COMPOSE, "GROUPCTL_BOOTSTRAP: groupcoordd-2:7402,groupcoordd-1:7402",
     "GROUPCTL_BOOTSTRAP: groupcoordd-1:7402,groupcoordd-2:7402", "GROUPCTL_BOOTSTRAP naming another server first"),
    (SERVERS_COMPOSE, "GROUPCTL_BOOTSTRAP: groupcoordd-1:7402,groupcoordd-2:7402",
     "GROUPCTL_BOOTSTRAP: groupcoordd-1:7402,127.0.0.1:7410", "GROUPCTL_BOOTSTRAP naming a published port"),
    (SERVERS_COMPOSE, 'GROUPCOORDD_ZK_CONNECT_WAIT_MS: "0"', 'GROUPCOORDD_ZK_CONNECT_WAIT_MS: "30000"',
     "servers that give up waiting for ZooKeeper"),
    (SERVERS_COMPOSE, "soft: 65536", "soft: 1024", "an open-file limit below max.connections"),
    (SERVERS_COMPOSE, "    hostname: groupcoordd-2\n", "    build: .\n    hostname: groupcoordd-2\n",
     "groupcoordd-2 given its own build"),
    (SERVERS_COMPOSE, "    hostname: groupcoordd-2\n",
     "    image: groupcoord/groupcoordd:other\n    hostname: groupcoordd-2\n",
     "groupcoordd-2 running another image than the one built"),
    # docker-compose.yml: the ensemble, and how the servers use it.
    (MAIN_COMPOSE, "zookeeper:3.8}", "zookeeper:3.7}", "ZooKeeper of another line"),
    (MAIN_COMPOSE, "GROUPCOORDD_ZK_CONNECT: zk1:2181,zk2:2181,zk3:2181\n",
     "GROUPCOORDD_ZK_CONNECT: zk1:2181,zk2:2181\n", "a connect string missing a node"),
    (MAIN_COMPOSE, "      zk3:\n        condition: service_healthy\n",
     "      zk4:\n        condition: service_healthy\n", "depends_on a service that does not exist"),
    (MAIN_COMPOSE, 'ZOO_4LW_COMMANDS_WHITELIST: "srvr,ruok,mntr"', 'ZOO_4LW_COMMANDS_WHITELIST: "ruok"',
     "a healthcheck word that is not whitelisted"),
    (MAIN_COMPOSE, '"127.0.0.1:2182:2181"', '"2182:2181"', "a ZooKeeper port published on every address"),
    (MAIN_COMPOSE, "      - zk2-data:/data\n      - zk2-datalog:/datalog\n      - zk2-logs:/logs\n",
     "      - /data\n      - /datalog\n      - /logs\n", "a ZooKeeper node without named volumes"),
    (MAIN_COMPOSE, "    volumes:\n      - zk3-data:/data\n      - zk3-datalog:/datalog\n      - zk3-logs:/logs\n",
     "", "a ZooKeeper node without volumes"),
    (MAIN_COMPOSE, "      - zk3-data:/data\n", "      - zk2-data:/data\n", "two ZooKeeper nodes on one volume"),
    (MAIN_COMPOSE, "      groupcoordd-1:\n        condition: service_started\n", "",
     "groupcoordd-2 not waiting for the image groupcoordd-1 builds"),
    # The external file.
    (EXTERNAL_COMPOSE, "${GROUPCOORD_ZK_CONNECT:-}",
     "${GROUPCOORD_ZK_CONNECT:?set GROUPCOORD_ZK_CONNECT}", "a file refused without GROUPCOORD_ZK_CONNECT"),
    (EXTERNAL_COMPOSE, "${GROUPCOORD_ZK_CONNECT:-}", "${GROUPCOORD_ZK_CONNECT:-127.0.0.1:2181}",
     "a default ensemble"),
    (EXTERNAL_COMPOSE, "GROUPCOORDD_ZK_ROOT:", "GROUPCOORDD_MAX_CONNECTIONS: \"100\"\n      GROUPCOORDD_ZK_ROOT:",
     "servers configured unlike docker-compose.yml's"),
    # (an extension field, x-: Compose ignores it)
    (EXTERNAL_COMPOSE, "    depends_on:\n", "    x-depends_on:\n",
     "groupcoordd-2 not waiting for the image groupcoordd-1 builds"),
    (EXTERNAL_COMPOSE, "file: ../../docker-compose.groupcoordd.yml", "file: docker-compose.groupcoordd.yml",
     "the file in the source tree's folder (its compose project)", "docker-compose.external.yml"),
    (NETWORK_COMPOSE, "    external: true\n", "", "a joined network the project would make and remove"),
    (NETWORK_COMPOSE, "${GROUPCOORD_NETWORK:-groupcoord_default}", "${GROUPCOORD_NETWORK:?set it}",
     "a network file refused without GROUPCOORD_NETWORK"),
    (NETWORK_COMPOSE, "${GROUPCOORD_NETWORK:-groupcoord_default}", "groupcoord_default",
     "a network file ignoring GROUPCOORD_NETWORK"),
    # The Dockerfile.
    ("Dockerfile", "apt-get install -y --no-install-recommends \\\n      build-essential",
     "apt-get install -y \\\n      build-essential", "a build stage installing recommended packages"),
    ("Dockerfile", "build-essential cmake \\", "build-essential cmake clang default-jre-headless \\",
     "a build stage installing clang and a JRE"),
    ("Dockerfile", "libspdlog-dev libfmt-dev", "libspdlog-dev", "a build stage missing libfmt-dev"),
    ("Dockerfile", "-DGROUPCOORD_BUILD_TESTS=OFF ", "", "a build with the tests on"),
    ("Dockerfile", "-DGROUPCOORD_BUILD_BENCH=OFF", "-DGROUPCOORD_BUILD_BENCH=ON", "a build with the benchmarks on"),
    ("Dockerfile", "libspdlog1.10 libfmt9", "libspdlog1.10", "a runtime stage missing libfmt9"),
    ("Dockerfile", " /staging/usr/bin/groupcoord-watch /usr/bin/", " /usr/bin/",
     "a runtime stage without groupcoord-watch"),
]

# Which checks read which file (a file's breakage must be noticed by one of them).
CHECKS_OF = {
    MAIN_COMPOSE: ("main",),
    SERVERS_COMPOSE: ("main", "external"),
    EXTERNAL_COMPOSE: ("external",),
    NETWORK_COMPOSE: ("external",),
    "Dockerfile": ("dockerfile",),
}


def copy_deployment(src, copy):
    for name in DEPLOY_FILES:
        os.makedirs(os.path.dirname(os.path.join(copy, name)), exist_ok=True)
        shutil.copy(os.path.join(src, name), os.path.join(copy, name))


def static_checks(copy, src, ctx, which, external=EXTERNAL_COMPOSE):
    """Problems the static checks find in a copy, the first of `which` to find any."""
    for check in which:
        if check == "main":
            found = check_main_compose(copy, ctx["options"], ctx["groupcoordd"], run_server=False)
        elif check == "external":
            found = check_external_compose(copy, ctx["options"], ctx["groupcoordd"], run_server=False,
                                           filename=external)
        else:
            found = check_dockerfile(copy, src, ctx["build"], ctx["options"], ctx["needed"], ctx["binaries"])
        if found:
            return found
    return []


def check_mutation(src, ctx, work, i, mutation):
    filename, old, new, what = mutation[:4]
    external = mutation[4] if len(mutation) > 4 else EXTERNAL_COMPOSE
    copy = os.path.join(work, f"broken-{i}")
    try:
        copy_deployment(src, copy)
        path = os.path.join(copy, filename)
        with open(path) as f:
            text = f.read()
        if old not in text:
            return f"cannot break {filename} with {what}: {old!r} is no longer in it (update MUTATIONS)"
        if external != EXTERNAL_COMPOSE:
            os.remove(path)
            path = os.path.join(copy, external)
        with open(path, "w") as f:
            f.write(text.replace(old, new))
        try:
            found = static_checks(copy, src, ctx, CHECKS_OF[filename], external)
        except Exception:
            return f"{filename} with {what}: the checks crashed:\n{traceback.format_exc()}"
        if not found:
            return f"{filename} with {what} passed the checks"
        return None
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def check_mutations(src, ctx, work):
    # An unbroken copy must pass, or a breakage noticed proves nothing.
    baseline = os.path.join(work, "unbroken")
    copy_deployment(src, baseline)
    problems = []
    for check in ("main", "external", "dockerfile"):
        found = static_checks(baseline, src, ctx, (check,))
        problems += [f"an unbroken copy fails the {check} checks: {p}" for p in found]
    shutil.rmtree(baseline)
    if problems:
        return problems
    workers = max(1, min(4, os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        results = pool.map(lambda im: check_mutation(src, ctx, work, *im), enumerate(MUTATIONS))
        problems = [r for r in results if r]
    return problems


# --------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--groupcoordd", required=True)
    parser.add_argument("--groupctl", help="groupctl, whose libraries the image must carry too")
    parser.add_argument("--watch", help="groupcoord-watch, whose libraries the image must carry too")
    args = parser.parse_args()
    src = os.path.realpath(args.source_dir)
    build = os.path.realpath(args.build_dir)
    report = Report()

    if yaml is None:
        print("FAIL python3-yaml is missing (scripts/dev.sh installs it)")
        return 1
    if shutil.which("docker-compose") is None:
        print("FAIL docker-compose is not installed (scripts/dev.sh installs Debian's docker-compose)")
        return 1
    try:
        options, general = read_options(args.groupcoordd)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"FAIL cannot ask groupcoordd for its options: {e}")
        return 1
    print(f"groupcoordd knows {len(options)} options: {' '.join(sorted(options))}")
    report.check("groupcoordd --help offers --config", lambda: [] if "config" in general else ["no --config option"])

    binaries = [args.groupcoordd] + [b for b in (args.groupctl, args.watch) if b]
    needed, needed_problems = runtime_needs(binaries)
    print(f"     {', '.join(os.path.basename(b) for b in binaries)} link libraries of: {' '.join(sorted(needed))}")
    ctx = {"options": options, "groupcoordd": args.groupcoordd, "build": build, "needed": needed,
           "binaries": binaries}
    with tempfile.TemporaryDirectory(prefix="groupcoord-deploy-") as work:
        report.check("docker-compose.yml", lambda: check_main_compose(src, options, args.groupcoordd))
        report.check(EXTERNAL_COMPOSE, lambda: check_external_compose(src, options, args.groupcoordd))
        report.check("Dockerfile", lambda: needed_problems + check_dockerfile(src, src, build, options, needed,
                                                                              binaries))
        report.check(".dockerignore", lambda: check_dockerignore(src))
        report.check("packaging/groupcoordd.properties documents every option", lambda: check_properties(src, options))
        report.check("groupcoordd accepts packaging/groupcoordd.properties",
                     lambda: check_properties_accepted(src, options, args.groupcoordd, work))
        report.check("packaging/groupcoordd.service settings", lambda: check_unit_settings(src, options))
        report.check("cmake --install of the unit and the example (and systemd-analyze verify)",
                     lambda: check_install(src, args.build_dir, args.groupcoordd, work, report))
        report.check(f"broken deployment files are caught ({len(MUTATIONS)} breakages)",
                     lambda: check_mutations(src, ctx, work))

    print(f"deploy checks: {report.passed} ok, {len(report.failed)} failing"
          + (f" ({', '.join(report.failed)})" if report.failed else ""))
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
