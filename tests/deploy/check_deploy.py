#!/usr/bin/python3
"""Checks that the deployment files still tell the truth about groupcoordd.

The truth is the built binary (`groupcoordd --help` lists every option with
its key, environment variable and default) and the native topology the
integration tests use (a three-node ZooKeeper 3.8 ensemble, two servers).
Checked against it:

  docker-compose.yml           `docker-compose config` accepts it; three
                               zookeeper:3.8 nodes that list each other, with
                               healthchecks whose four-letter words are
                               whitelisted; two groupcoordd services built
                               from the Dockerfile that wait for every node;
                               every GROUPCOORDD_ variable is an option;
                               groupcoordd accepts each service's environment;
                               the connect string names all three nodes; the
                               ports agree with EXPOSE and the defaults; each
                               server advertises the host port it is
                               published on.
  docker-compose.external.yml  refuses to start without GROUPCOORD_ZK_CONNECT;
                               with it, the same two servers and no ensemble.
  Dockerfile, .dockerignore    Debian bookworm stages; a non-root runtime user;
                               groupcoordd as entrypoint; the runtime packages
                               are exactly those providing the shared
                               libraries groupcoordd and groupctl link.
  packaging/                   the example properties file names every option
                               and no other, each with its real default, and
                               groupcoordd accepts it; the systemd unit has its
                               settings, installs with `cmake --install` and
                               passes `systemd-analyze verify`.

It also breaks copies of the compose files on purpose and requires the
checks to notice, so a check that can no longer fail is itself a failure.

Usage: check_deploy.py --source-dir S --build-dir B --groupcoordd PATH [--groupctl PATH]
"""

import argparse
import fnmatch
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
        problems = run()
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
    if len(options) < 10 or "zk.connect" not in options or "listen.port" not in options:
        raise RuntimeError("could not read the options from groupcoordd --help:\n" + out.stdout)
    general = re.findall(r"^\s+(?:-\w, )?--([a-z-]+)", out.stdout, re.M)
    return options, general


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONFIG_LINE = re.compile(r"\bconfig ([a-z0-9][a-z0-9.]*)=(.*)$")


def effective_config(groupcoordd, options, args, env_extra, wait=15.0):
    """Starts groupcoordd with `args` and `env_extra` (plus overrides that keep
    it on loopback, on free ports, and away from any real ensemble), reads the
    effective configuration it logs at start, then kills it.

    Returns (config dict or None when it refused to start, its output)."""
    overrides = ["--listen-address=127.0.0.1", "--listen-port=0",
                 # Nothing listens there: the server logs its configuration,
                 # then waits for ZooKeeper, and is killed meanwhile.
                 f"--zk-connect=127.0.0.1:{free_port()}"]
    for key in options:
        # Any other listening port (the HTTP endpoint, ...): a free one.
        if key.endswith(".port") and key not in ("listen.port", "advertised.port"):
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
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            chunk = os.read(fd, 65536) if ready else b""
            if ready and not chunk:
                break  # it exited
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
        if proc.poll() is None:
            # It blocks SIGTERM until it serves; this one never will.
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
    if buf:
        lines.append(buf.decode("utf-8", "replace"))
    output = "\n".join(lines)
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
        if (key.endswith(".port") and key not in ("listen.port", "advertised.port")) or \
                (key.endswith(".address") and key != "listen.address"):
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


# --------------------------------------------------------------------------
# Compose


def compose_config(src, filename, env_extra=None):
    """`docker-compose -f FILE config` in a clean environment: (rc, parsed or None, output)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GROUPCOORD") and not k.startswith("COMPOSE_")}
    env.update(env_extra or {})
    out = subprocess.run(["docker-compose", "-f", os.path.join(src, filename), "config"],
                         capture_output=True, text=True, env=env, cwd=src, timeout=120)
    parsed = None
    if out.returncode == 0:
        parsed = yaml.safe_load(out.stdout)
    return out.returncode, parsed, (out.stdout + out.stderr).strip()


def env_of(service):
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) if "=" in e else (e, "") for e in env)
    return {k: ("" if v is None else str(v)) for k, v in env.items()}


def port_pairs(service):
    """[(published host port or None, container port)]"""
    pairs = []
    for p in service.get("ports") or []:
        if isinstance(p, dict):
            pub = p.get("published")
            pairs.append((int(pub) if pub not in (None, "") else None, int(p["target"])))
        else:
            parts = str(p).split("/")[0].split(":")
            target = int(parts[-1])
            pub = int(parts[-2]) if len(parts) >= 2 and parts[-2] else None
            pairs.append((pub, target))
    return pairs


def healthcheck_text(service):
    test = (service.get("healthcheck") or {}).get("test")
    if isinstance(test, list):
        return " ".join(str(t) for t in test)
    return str(test or "")


ZOO_SERVER = re.compile(r"server\.(\d+)=([^:\s]+):(\d+):(\d+)(?:[^;\s]*)(?:;(?:([^:\s]+):)?(\d+))?")


def split_services(parsed):
    services = parsed.get("services") or {}
    zk = {n: s for n, s in services.items() if str(s.get("image", "")).split(":")[0].endswith("zookeeper")}
    servers = {n: s for n, s in services.items() if "build" in s}
    return services, zk, servers


def check_ensemble(zk):
    """Problems with the ZooKeeper services; returns (problems, {(host, client port)})."""
    problems = []
    nodes = set()
    if len(zk) != 3:
        problems.append(f"expected three ZooKeeper services, found {len(zk)}: {sorted(zk)}")
    ids = {}
    for name, s in sorted(zk.items()):
        image = str(s.get("image", ""))
        tag = image.split(":", 1)[1] if ":" in image else "latest"
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


def check_servers(servers, options, expose, src, require_deps_on=None):
    """Problems with the groupcoordd services (shared by both compose files)."""
    problems = []
    if len(servers) != 2:
        problems.append(f"expected two groupcoordd services, found {len(servers)}: {sorted(servers)}")
    env_names = {v["env"]: k for k, v in options.items()}
    listen_default = int(options["listen.port"]["default"])
    http_default = int(options["http.port"]["default"]) if "http.port" in options else None
    server_ids = {}
    published = {}
    for name, s in sorted(servers.items()):
        build = s.get("build") or {}
        context = build.get("context") if isinstance(build, dict) else build
        if os.path.realpath(str(context)) != os.path.realpath(src):
            problems.append(f"{name}: built from {context}, not from the source tree")
        if isinstance(build, dict) and build.get("dockerfile", "Dockerfile") != "Dockerfile":
            problems.append(f"{name}: built from {build.get('dockerfile')}, not the Dockerfile")
        if require_deps_on is not None:
            deps = s.get("depends_on") or {}
            for zk_name in sorted(require_deps_on):
                cond = deps.get(zk_name, {}).get("condition") if isinstance(deps, dict) else None
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
        if targets != {listen, http}:
            problems.append(f"{name}: publishes container ports {sorted(targets)}, expected {sorted({listen, http})} "
                            "(protocol and HTTP)")
        for t in sorted(targets - expose):
            problems.append(f"{name}: container port {t} is not in the Dockerfile's EXPOSE {sorted(expose)}")
        for pub, t in pairs:
            if pub is None:
                problems.append(f"{name}: container port {t} has no fixed host port")
            elif pub in published:
                problems.append(f"{name}: host port {pub} is also published by {published[pub]}")
            else:
                published[pub] = name
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
    return problems


def parse_connect(value):
    nodes = set()
    for part in value.split("/")[0].split(","):
        host, _, port = part.strip().rpartition(":")
        nodes.add((host, int(port) if port.isdigit() else -1))
    return nodes


def check_main_compose(src, options, groupcoordd, run_server=True):
    """All problems of docker-compose.yml; [] when it is fine."""
    rc, parsed, output = compose_config(src, "docker-compose.yml")
    if rc != 0:
        return [f"docker-compose config failed (exit {rc}): {output}"]
    problems = []
    _, zk, servers = split_services(parsed)
    zk_problems, nodes = check_ensemble(zk)
    problems += zk_problems
    expose, _ = dockerfile_expose(src)
    problems += check_servers(servers, options, expose, src, require_deps_on=set(zk))
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


def options_key(options, env_name):
    for key, v in options.items():
        if v["env"] == env_name:
            return key
    return None


def check_external_compose(src, options):
    problems = []
    rc, _, output = compose_config(src, "docker-compose.external.yml")
    if rc == 0:
        problems.append("docker-compose.external.yml is accepted without GROUPCOORD_ZK_CONNECT: the servers would "
                        "start against no ensemble")
    elif "GROUPCOORD_ZK_CONNECT" not in output:
        problems.append(f"without GROUPCOORD_ZK_CONNECT it fails, but not saying so: {output}")
    connect = "zk-a.example:2181,zk-b.example:2181,zk-c.example:2181"
    rc, parsed, output = compose_config(src, "docker-compose.external.yml", {"GROUPCOORD_ZK_CONNECT": connect})
    if rc != 0:
        return problems + [f"docker-compose config failed (exit {rc}): {output}"]
    services, zk, servers = split_services(parsed)
    if zk:
        problems.append(f"it runs ZooKeeper services of its own: {sorted(zk)}")
    expose, _ = dockerfile_expose(src)
    problems += check_servers(servers, options, expose, src)
    for name, s in sorted(servers.items()):
        if s.get("depends_on"):
            problems.append(f"{name}: depends on {sorted(s['depends_on'])}, which this file does not run")
        got = env_of(s).get("GROUPCOORDD_ZK_CONNECT")
        if got != connect:
            problems.append(f"{name}: GROUPCOORDD_ZK_CONNECT is {got!r}, not GROUPCOORD_ZK_CONNECT's {connect!r}")
    # The same servers as docker-compose.yml runs.
    rc, main, _ = compose_config(src, "docker-compose.yml")
    if rc == 0:
        _, _, main_servers = split_services(main)
        for name in sorted(set(servers) & set(main_servers)):
            a = {k: v for k, v in env_of(servers[name]).items() if not k.startswith("GROUPCOORDD_ZK_")}
            b = {k: v for k, v in env_of(main_servers[name]).items() if not k.startswith("GROUPCOORDD_ZK_")}
            if a != b or port_pairs(servers[name]) != port_pairs(main_servers[name]):
                problems.append(f"{name}: configured differently from docker-compose.yml's {name}")
        if set(servers) != set(main_servers):
            problems.append(f"services {sorted(servers)} differ from docker-compose.yml's {sorted(main_servers)}")
    return problems


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


def apt_packages(args):
    pkgs = []
    for command in re.split(r"&&|;", args):
        words = command.split()
        if "apt-get" in words and "install" in words:
            for w in words[words.index("install") + 1:]:
                if not w.startswith("-"):
                    pkgs.append(w)
    return pkgs


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


def check_dockerfile(src, options, binaries):
    problems = []
    instrs = dockerfile_instructions(src)
    froms = [args.split()[0] for _, instr, args in instrs if instr == "FROM"]
    if len(froms) < 2:
        problems.append(f"not a multi-stage build: FROM {froms}")
    for base in froms:
        if base not in ("debian:bookworm", "debian:bookworm-slim"):
            problems.append(f"stage FROM {base}: expected debian:bookworm or debian:bookworm-slim")
    last = max(s for s, _, _ in instrs)
    first = [(i, a) for s, i, a in instrs if s == 0]
    if not any(i == "RUN" and "dev.sh setup" in a for i, a in first):
        problems.append("the build stage does not install its packages with scripts/dev.sh setup")
    if not any(i == "RUN" and "dev.sh build" in a for i, a in first):
        problems.append("the build stage does not build with scripts/dev.sh build")
    runtime = [(i, a) for s, i, a in instrs if s == last]
    users = [a for i, a in runtime if i == "USER"]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problems.append(f"the runtime stage runs as {users[-1] if users else 'root'}: expected a non-root USER")
    entry = [a for i, a in runtime if i == "ENTRYPOINT"]
    if not entry or "groupcoordd" not in entry[-1]:
        problems.append(f"ENTRYPOINT is {entry[-1] if entry else '(none)'}, not groupcoordd")
    expose, _ = dockerfile_expose(src)
    want = {int(options["listen.port"]["default"])}
    if "http.port" in options:
        want.add(int(options["http.port"]["default"]))
    else:
        want.add(7401)
    if expose != want:
        problems.append(f"EXPOSE {sorted(expose)}, but groupcoordd's default ports are {sorted(want)} "
                        "(listen.port, http.port)")
    runtime_pkgs = set()
    for i, a in runtime:
        if i == "RUN":
            runtime_pkgs |= set(apt_packages(a))
    base_libs = {"libc6", "libgcc-s1", "libstdc++6"}
    needed = {}
    for binary in binaries:
        try:
            for pkg, sonames in needed_packages(binary).items():
                needed.setdefault(pkg, set()).update(sonames)
        except (RuntimeError, subprocess.CalledProcessError, FileNotFoundError) as e:
            problems.append(f"cannot tell which packages {os.path.basename(binary)} needs: {e}")
    print(f"     the binaries link libraries of: {' '.join(sorted(needed))}")
    for pkg in sorted(set(needed) - runtime_pkgs):
        problems.append(f"the runtime stage does not install {pkg}, which provides {sorted(needed[pkg])}")
    for pkg in sorted(runtime_pkgs - set(needed) - base_libs):
        problems.append(f"the runtime stage installs {pkg}, which no installed binary links")
    copied = " ".join(a for i, a in runtime if i == "COPY")
    if "--from=" not in copied:
        problems.append("the runtime stage copies nothing from the build stage")
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
    config, out = effective_config(groupcoordd, options, [f"--config={bad}"], {}, wait=10)
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


MUTATIONS = [
    ("docker-compose.groupcoordd.yml", 'GROUPCOORDD_ADVERTISED_PORT: "7410"', 'GROUPCOORDD_ADVERTIZED_PORT: "7410"',
     "a misspelt GROUPCOORDD_ variable"),
    ("docker-compose.yml", "image: zookeeper:3.8", "image: zookeeper:3.7", "ZooKeeper of another line"),
    ("docker-compose.yml", "GROUPCOORDD_ZK_CONNECT: zk1:2181,zk2:2181,zk3:2181\n    depends_on: *wait",
     "GROUPCOORDD_ZK_CONNECT: zk1:2181,zk2:2181\n    depends_on: *wait", "a connect string missing a node"),
    ("docker-compose.yml", "      zk3:\n        condition: service_healthy\n",
     "      zk4:\n        condition: service_healthy\n", "depends_on a service that does not exist"),
    ("docker-compose.groupcoordd.yml", '"7410:7400"', '"7400:7400"', "two servers on one host port"),
    ("docker-compose.yml", 'ZOO_4LW_COMMANDS_WHITELIST: "srvr,ruok,mntr"', 'ZOO_4LW_COMMANDS_WHITELIST: "ruok"',
     "a healthcheck word that is not whitelisted"),
]


def check_mutations(src, options, groupcoordd, work):
    problems = []
    for i, (filename, old, new, what) in enumerate(MUTATIONS):
        copy = os.path.join(work, f"broken-{i}")
        os.makedirs(copy)
        for name in ("docker-compose.yml", "docker-compose.groupcoordd.yml", "Dockerfile", ".dockerignore"):
            shutil.copy(os.path.join(src, name), copy)
        path = os.path.join(copy, filename)
        with open(path) as f:
            text = f.read()
        if old not in text:
            problems.append(f"cannot break {filename} with {what}: {old!r} is no longer in it (update MUTATIONS)")
            continue
        with open(path, "w") as f:
            f.write(text.replace(old, new, 1))
        found = check_main_compose(copy, options, groupcoordd, run_server=False)
        if not found:
            problems.append(f"{filename} with {what} passed the checks")
        shutil.rmtree(copy)
    return problems


# --------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--groupcoordd", required=True)
    parser.add_argument("--groupctl")
    args = parser.parse_args()
    src = os.path.realpath(args.source_dir)
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

    binaries = [args.groupcoordd] + ([args.groupctl] if args.groupctl else [])
    with tempfile.TemporaryDirectory(prefix="groupcoord-deploy-") as work:
        report.check("docker-compose.yml", lambda: check_main_compose(src, options, args.groupcoordd))
        report.check("docker-compose.external.yml", lambda: check_external_compose(src, options))
        report.check("Dockerfile", lambda: check_dockerfile(src, options, binaries))
        report.check(".dockerignore", lambda: check_dockerignore(src))
        report.check("packaging/groupcoordd.properties documents every option", lambda: check_properties(src, options))
        report.check("groupcoordd accepts packaging/groupcoordd.properties",
                     lambda: check_properties_accepted(src, options, args.groupcoordd, work))
        report.check("packaging/groupcoordd.service settings", lambda: check_unit_settings(src, options))
        report.check("cmake --install of the unit and the example (and systemd-analyze verify)",
                     lambda: check_install(src, args.build_dir, args.groupcoordd, work, report))
        report.check("broken compose files are caught", lambda: check_mutations(src, options, args.groupcoordd, work))

    print(f"deploy checks: {report.passed} ok, {len(report.failed)} failing"
          + (f" ({', '.join(report.failed)})" if report.failed else ""))
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
