#!/usr/bin/env python3
"""The docs check: the repository's Markdown holds together, and the getting
started page works as written.

  docs-check.py links [--source-dir DIR]
      Every relative link and image in every Markdown file of the repository
      (git's tracked and untracked-but-not-ignored files) must name a file or
      folder that exists, and an anchor (`#...`) must be a heading of the file
      it points into (GitHub's rule for heading anchors). Links in code blocks
      and code spans are not links. Also: every command of the README's
      blocks marked `<!-- docs-check: tour -->` must be a runnable command
      of docs/getting-started.md, so the tour runs as the page does. Exit 1
      and one line per broken link or stray command.

  docs-check.py run --build-dir DIR [--source-dir DIR] [--zk CONNECT]
      Runs the command blocks of docs/getting-started.md marked runnable,
      against groupcoordd from the build and the test ensemble
      (--zk, default $GROUPCOORD_TEST_ZK). Exit 1 when a command exits
      otherwise than the page says, or its output lacks what the page says
      it shows.

A runnable block is a fenced block right after a comment

    <!-- docs-check: run; expect: REGEX; ... -->

with these fields, separated by `;`:
    run               the block's lines run one by one with bash, in order
    expect: REGEX     the output (stdout and stderr) must match REGEX
                      (Python syntax, searched; several expects: all)
    exit: N           the exit code the page expects (default 0)
    within: S         rerun the block until it passes, for up to S seconds
                      (what a reader does who types it a moment later)
    background        start it and go on; it must have exited, passing,
                      by the end (120 s after the last block at most)

The page is written for `scripts/dev.sh run` (ZooKeeper at 127.0.0.1:2181,
groupcoordd on 7400, its HTTP port 7401, its Kafka port 9092). The check
runs the same groupcoordd with the same options, except where it listens and
where its znodes go: free ports, and a fresh chroot of the test ensemble, so
that it never meets another run. The commands run in a scratch folder whose
`build` is the build folder, with those addresses replaced by the check's
before they run (each replacement is printed).
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unicodedata

SKIP_DIRS = ("node_modules", ".venv", ".cache", "build", "scratch")


# ----------------------------------------------------------------- links

def markdown_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard",
                              "-z", "--", "*.md"], check=True, capture_output=True).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (subprocess.CalledProcessError, FileNotFoundError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith(SKIP_DIRS)]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith(".md")]
    return sorted(f for f in files if os.path.exists(os.path.join(root, f))
                  and not any(part.startswith(SKIP_DIRS) for part in f.split("/")[:-1]))


FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def strip_code(text):
    """The text with fenced blocks, indented blocks and code spans blanked
    (line numbers kept)."""
    lines, out, fence, prev_blank = text.split("\n"), [], None, True
    for line in lines:
        m = FENCE.match(line)
        if fence:
            out.append("")
            if m and m.group(1) == fence:
                fence = None
            continue
        if m:
            fence = m.group(1)
            out.append("")
            continue
        if line.startswith("    ") and prev_blank and line.strip():
            out.append("")  # an indented code block (only after a blank line: not a list's continuation)
            continue
        prev_blank = not line.strip() or (prev_blank and line.startswith("    "))
        out.append(re.sub(r"(`+)(.+?)\1", lambda s: " " * len(s.group(0)), line))
    return out


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces
    to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text
    text = text.replace("`", "").strip().lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_ " or cat[0] in "LN" or cat == "Mn":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, result = {}, set()
        with open(path, encoding="utf-8") as f:
            for line in strip_code(f.read()):
                m = re.match(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                result.add(base if n == 0 else f"{base}-{n}")
            f.seek(0)
            for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", f.read()):
                result.add(m.group(1))
        cache[path] = result
    return cache[path]


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(\S+)")


def check_links(root):
    broken, count = [], 0
    for rel in markdown_files(root):
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8") as f:
            lines = strip_code(f.read())
        for number, line in enumerate(lines, 1):
            targets = [m.group(1) for m in LINK.finditer(line)] + [m.group(1) for m in REF_DEF.finditer(line)]
            for target in targets:
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto: ...
                    continue
                count += 1
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                where = f"{rel}:{number}: [{target}]"
                if not os.path.exists(dest):
                    broken.append(f"{where}: no such file {os.path.relpath(dest, root)}")
                elif not os.path.realpath(dest).startswith(os.path.realpath(root) + os.sep) and dest != path:
                    broken.append(f"{where}: points outside the repository")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    broken.append(f"{where}: no heading with the anchor #{anchor} in {os.path.relpath(dest, root)}")
    for b in broken:
        print(b)
    print(f"docs-check links: {count} relative link(s) in {len(markdown_files(root))} Markdown file(s), "
          f"{len(broken)} broken")
    tour = check_tour(root)
    print(f"docs-check links: the README's tour: {len(tour)} command(s) not on the getting started page")
    return 1 if broken or tour else 0


# ------------------------------------------------------------- run blocks

MARK = re.compile(r"^<!--\s*docs-check:\s*(.*?)\s*-->\s*$")


def tour_blocks(path):
    """The command blocks of `path` marked `<!-- docs-check: tour -->`: the
    README's tour, whose every command must be one of getting started's
    runnable ones (so the two cannot drift apart)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found = []
    for i, line in enumerate(lines):
        m = MARK.match(line.strip())
        if not m or m.group(1).strip() != "tour":
            continue
        j = i + 1
        fence = FENCE.match(lines[j]) if j < len(lines) else None
        if not fence:
            found.append((i + 1, None))
            continue
        k = j + 1
        while k < len(lines) and not lines[k].lstrip().startswith(fence.group(1)):
            found += [(k + 1, lines[k].strip())] if lines[k].strip() else []
            k += 1
    return found


def check_tour(root, page="docs/getting-started.md"):
    runnable = {c.strip() for b in runnable_blocks(os.path.join(root, page)) for c in b["commands"]}
    broken = []
    for rel in ("README.md",):
        for number, command in tour_blocks(os.path.join(root, rel)):
            if command is None:
                broken.append(f"{rel}:{number}: a docs-check tour mark must come right before a fenced block")
            elif command not in runnable:
                broken.append(f"{rel}:{number}: '{command}' is not a runnable command of {page}")
    for b in broken:
        print(b)
    return broken


def runnable_blocks(page):
    with open(page, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        if not m or m.group(1).strip() == "tour":
            i += 1
            continue
        spec = {"expect": [], "exit": 0, "within": 0.0, "background": False, "line": i + 1}
        for field in [x.strip() for x in m.group(1).split(";") if x.strip()]:
            key, _, value = field.partition(":")
            key, value = key.strip(), value.strip()
            if key == "run":
                pass
            elif key == "expect":
                spec["expect"].append(value)
            elif key == "exit":
                spec["exit"] = int(value)
            elif key == "within":
                spec["within"] = float(value)
            elif key == "background":
                spec["background"] = True
            else:
                raise SystemExit(f"{page}:{i + 1}: unknown docs-check field '{key}'")
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        fence = FENCE.match(lines[j]) if j < len(lines) else None
        if not fence:
            raise SystemExit(f"{page}:{i + 1}: a docs-check mark must come right before a fenced block")
        k = j + 1
        while k < len(lines) and not lines[k].lstrip().startswith(fence.group(1)):
            k += 1
        spec["commands"] = [c for c in lines[j + 1:k] if c.strip() and not c.lstrip().startswith("#")]
        blocks.append(spec)
        i = k + 1
    return blocks


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.2)
    return False


def judge(spec, rc, output):
    problems = []
    if rc != spec["exit"]:
        problems.append(f"exit code {rc}, the page expects {spec['exit']}")
    for e in spec["expect"]:
        if not re.search(e, output, re.M):
            problems.append(f"no match for /{e}/ in its output")
    return problems


def run_blocks(args):
    source = os.path.abspath(args.source_dir)
    build = os.path.abspath(args.build_dir)
    zk = args.zk or os.environ.get("GROUPCOORD_TEST_ZK", "")
    if not zk:
        print("docs-check run: no ensemble: give --zk or set GROUPCOORD_TEST_ZK (scripts/dev.sh test does)")
        return 1
    page = os.path.join(source, args.page)
    blocks = runnable_blocks(page)
    if not blocks:
        print(f"docs-check run: {args.page} has no runnable block")
        return 1
    scratch = tempfile.mkdtemp(prefix="groupcoord-docs-check.")
    os.symlink(build, os.path.join(scratch, "build"))
    root = f"/docs-check-{os.getpid()}-{int(time.time())}"
    groupctl = os.path.join(build, "client", "groupctl")
    # The chroot must exist: groupctl creates it as the parent of a marker.
    subprocess.run([groupctl, "topic", "create", "docs-check", "--partitions", "1", "--zookeeper", zk,
                    "--topics-path", root], check=True, capture_output=True)
    chrooted = zk + root
    port, http, kafka = free_port(), free_port(), free_port()
    replace = [("127.0.0.1:2181", chrooted), ("127.0.0.1:7400", f"127.0.0.1:{port}"),
               ("127.0.0.1:7401", f"127.0.0.1:{http}"), ("127.0.0.1:9092", f"127.0.0.1:{kafka}")]
    for a, b in replace:
        print(f"docs-check run: the page's {a} is {b} here")
    env = dict(os.environ, GROUPCTL_BOOTSTRAP=f"127.0.0.1:{port}")
    # As scripts/dev.sh run starts it, on the check's ports.
    server_log = open(os.path.join(scratch, "groupcoordd.log"), "w")
    server = subprocess.Popen([os.path.join(build, "server", "groupcoordd"), f"--zk-connect={chrooted}",
                               "--listen-address=127.0.0.1", f"--listen-port={port}", f"--http-port={http}",
                               f"--kafka-listen-port={kafka}"], stdout=server_log, stderr=subprocess.STDOUT)
    failures, background = [], []
    try:
        if not wait_port(port, 30) or not wait_port(http, 10):
            print("docs-check run: groupcoordd did not start; its log:")
            print(open(server_log.name).read()[-4000:])
            return 1

        def script_of(spec):
            text = "\n".join(spec["commands"])
            for a, b in replace:
                text = text.replace(a, b)
            return "set -o pipefail\n" + text + "\n"

        def show(spec, rc, output, problems):
            name = f"{args.page}:{spec['line']}"
            print(f"--- {name}: {' / '.join(spec['commands'])}")
            print("\n".join("    " + l for l in output.rstrip().split("\n")[-25:]))
            if problems:
                failures.append(name)
                for p in problems:
                    print(f"FAIL {name}: {p}")
            else:
                print(f"ok   {name}")

        for spec in blocks:
            if spec["background"]:
                out = open(os.path.join(scratch, f"block-{spec['line']}.out"), "w+")
                p = subprocess.Popen(["bash", "-c", script_of(spec)], cwd=scratch, env=env, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
                background.append((spec, p, out))
                continue
            end = time.monotonic() + spec["within"]
            while True:
                r = subprocess.run(["bash", "-c", script_of(spec)], cwd=scratch, env=env,
                                   capture_output=True, text=True, timeout=300)
                output = r.stdout + r.stderr
                problems = judge(spec, r.returncode, output)
                if not problems or time.monotonic() >= end:
                    break
                time.sleep(1)
            show(spec, r.returncode, output, problems)
        deadline = time.monotonic() + 120
        for spec, p, out in background:
            try:
                rc = p.wait(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                rc = p.wait()
            out.close()
            text = open(out.name).read()
            show(spec, rc, text, judge(spec, rc, text))
    finally:
        for _, p, _ in background:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    print(f"docs-check run: {len(blocks)} runnable block(s) of {args.page}, {len(failures)} failed"
          + ("" if not failures else f" (groupcoordd's log: {server_log.name})"))
    if not failures:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    links = sub.add_parser("links")
    links.add_argument("--source-dir", default=here)
    run = sub.add_parser("run")
    run.add_argument("--source-dir", default=here)
    run.add_argument("--build-dir", required=True)
    run.add_argument("--zk", default="")
    run.add_argument("--page", default="docs/getting-started.md")
    args = parser.parse_args()
    if args.command == "links":
        return check_links(os.path.abspath(args.source_dir))
    return run_blocks(args)


if __name__ == "__main__":
    sys.exit(main())
