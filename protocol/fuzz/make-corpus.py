#!/usr/bin/env python3
"""Regenerates protocol/fuzz/corpus/: the fuzzer's committed seeds.

Every message of the shared vectors file (tests/protocol/vectors/
protocol-v0.json, a copy of the team's protocol-v0.json), as a whole frame
and as a bare body, plus one input for each malformed case of
docs/protocol.md section 8. Files named regression-* are inputs that once
broke the codec; this script never removes them.

    protocol/fuzz/make-corpus.py [VECTORS_JSON]
"""
import json
import os
import re
import struct
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
vectors = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests/protocol/vectors/protocol-v0.json")
out = os.path.join(here, "corpus")
os.makedirs(out, exist_ok=True)
for name in os.listdir(out):
    if not name.startswith("regression-"):
        os.remove(os.path.join(out, name))


def slug(text):
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


# The examples of later versions sit beside the version-0 file.
for path in (vectors, *(os.path.join(os.path.dirname(vectors), f"protocol-v{n}.json") for n in (1, 2))):
    if not os.path.exists(path):
        continue
    with open(path) as f:
        doc = json.load(f)
    for v in doc["vectors"]:
        frame = bytes.fromhex(v["hex"])
        write("vector-" + slug(v["name"]) + ".frame", frame)
        write("vector-" + slug(v["name"]) + ".body", frame[4:])


# Hand-built malformed requests (big-endian, as docs/protocol.md says).
def i8(v): return struct.pack(">B", v & 0xff)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def s(t): return i16(len(t)) + t.encode()
def hdr(key, version=0, corr=77, client="cli"): return i16(key) + i16(version) + i64(corr) + (s(client) if client is not None else i16(-1))
def frame(body): return i32(len(body)) + body


malformed = {
    "short-body": i16(3) + i16(0) + i64(0x1122334455667788) + i8(0),
    "unknown-api": hdr(42) + i8(0x99),
    "unsupported-version": hdr(0, version=3) + s("g") + s("c") + i64(1),
    "v1-bad-assignment-mode": hdr(1, version=1) + s("g") + i64(1000) + i32(0) + i8(0) + i8(7),
    "v1-metadata-beyond-frame": hdr(3, version=1) + s("g") + s("") + i32(0) + i32(100000) + s(""),
    "client-id-256": hdr(2, client="c" * 256) + s("orders"),
    "client-id-negative": i16(2) + i16(0) + i64(5) + i16(-2) + s("orders"),
    "truncated-generation": (hdr(0) + s("orders") + s("m-1") + i64(5))[:-3],
    "trailing-byte": hdr(2) + s("orders") + i8(0),
    "string-length-minus-2": hdr(2) + i16(-2) + b"x" * 8,
    "string-beyond-frame": hdr(2) + i16(7) + b"ord",
    "null-group": hdr(2) + i16(-1),
    "null-topic": hdr(6) + s("g") + s("c") + i64(1) + i32(1) + i16(-1) + i32(0) + i64(0),
    "count-minus-2": hdr(4) + i32(-2),
    "count-minus-1": hdr(4) + i32(-1),
    "count-huge-names": hdr(4) + i32(0x7fffffff) + s("a"),
    "count-huge-offsets": hdr(8) + s("g") + i32(0x7fffffff) + s("t") + i32(0) + i64(0),
    "bool-2": hdr(1) + s("g") + i64(1000) + i32(0) + i8(2),
    "bad-group-name": hdr(0) + s("../x") + s("c") + i64(1),
    "bad-consumer-id": hdr(0) + s("g") + s("a/b") + i64(1),
    "drain-2": hdr(10) + i32(2) + i8(2),
    "drain-truncated": hdr(10) + i32(2),
    "drain-negative-server": hdr(10) + i32(-1) + i8(1),
    "describe-servers-trailing": hdr(12) + i8(0),
}
for name, body in malformed.items():
    write("malformed-" + name + ".frame", frame(body))
# Frames the server refuses outright: too small, negative, too large.
write("malformed-frame-too-small", i32(5) + b"\0" * 5)
write("malformed-frame-negative", i32(-1) + b"\0" * 8)
write("malformed-frame-too-large", i32(0x7fffffff) + b"\0" * 16)
# Two requests in one stream: the reader must find the second frame.
write("stream-two-frames", frame(hdr(2) + s("orders")) + frame(hdr(7, corr=78) + s("orders") + i32(0)))
print(len(os.listdir(out)), "files in", out)
