"""The client's half of SCRAM-SHA-256 (RFC 5802 with RFC 7677's hash), as
groupcoord's Authenticate version 1 carries it (docs/protocol.md, "9
Authenticate"). Pure: no I/O, the connection carries the messages.

The exchange, on one connection::

    client-first   n,,n=USER,r=CLIENT_NONCE
    server-first   r=CLIENT_NONCE SERVER_NONCE,s=SALT_BASE64,i=ITERATIONS
    client-final   c=biws,r=CLIENT_NONCE SERVER_NONCE,p=CLIENT_PROOF_BASE64
    server-final   v=SERVER_SIGNATURE_BASE64   (or e=invalid-proof)

No channel binding, no authorization identity. The secret never crosses the
wire; the server proves in its last message that it holds the user's keys,
and :meth:`ScramClient.verify_server` checks that proof.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

MECHANISM = "SCRAM-SHA-256"
#: The fewest PBKDF2 iterations a connection accepts from a server.
MIN_ITERATIONS = 10_000
#: The most: more would let a server make the client spin.
MAX_ITERATIONS = 10_000_000
NONCE_BYTES = 18

_GS2_HEADER = "n,,"
_CHANNEL_BINDING = base64.b64encode(_GS2_HEADER.encode()).decode()  # "biws"


class ScramError(Exception):
    """The server's message is malformed, refuses, or does not prove what it must."""


def escape_user(user: str) -> str:
    """A user name as a SCRAM attribute value: '=' as "=3D", ',' as "=2C"."""
    return user.replace("=", "=3D").replace(",", "=2C")


def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def _attributes(message: str, what: str) -> list[tuple[str, str]]:
    """``a=value`` pairs in order; ScramError when one is not of that form."""
    out = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=" or not part[0].isascii() or not part[0].isalpha():
            raise ScramError(f"the server's {what} message is malformed: {part[:40]!r} is not an attribute")
        out.append((part[0], part[2:]))
    return out


def _refusal(attrs: list[tuple[str, str]], what: str) -> None:
    if attrs and attrs[0][0] == "e":
        raise ScramError(f"the server refused in its {what} message: {attrs[0][1][:100]}")


class ScramClient:
    """One exchange for one user: :meth:`first`, then :meth:`final` with the
    server's first message, then :meth:`verify_server` with its last."""

    def __init__(self, user: str, secret: str, nonce: str | None = None) -> None:
        self.user = user
        self._secret = secret
        #: Our nonce; tests give a fixed one (RFC 7677's), connections a fresh random one.
        self.nonce = nonce if nonce is not None else base64.b64encode(secrets.token_bytes(NONCE_BYTES)).decode()
        self._client_first_bare = f"n={escape_user(user)},r={self.nonce}"
        self._auth_message = ""
        self._server_key = b""

    def __repr__(self) -> str:  # the secret stays out of logs
        return f"ScramClient(user={self.user!r}, secret=<hidden>)"

    def first(self) -> str:
        """The client-first message."""
        return _GS2_HEADER + self._client_first_bare

    def final(self, server_first: str, min_iterations: int = MIN_ITERATIONS) -> str:
        """The client-final message, with our proof. ScramError when the
        server's first message is malformed or refuses, its nonce does not
        extend ours, or its iteration count is outside ``min_iterations`` to
        MAX_ITERATIONS."""
        attrs = _attributes(server_first, "first")
        _refusal(attrs, "first")
        if attrs and attrs[0][0] == "m":
            raise ScramError("the server's first message asks for an extension this client does not speak")
        if len(attrs) < 3 or [a for a, _ in attrs[:3]] != ["r", "s", "i"]:
            raise ScramError("the server's first message is malformed: it must start r=...,s=...,i=...")
        nonce, salt_text, iterations_text = (v for _, v in attrs[:3])
        if not nonce.startswith(self.nonce) or len(nonce) <= len(self.nonce):
            raise ScramError("the server's nonce does not extend ours")
        if not all(0x21 <= ord(c) <= 0x7E for c in nonce):
            raise ScramError("the server's nonce has characters other than printable ASCII")
        try:
            salt = base64.b64decode(salt_text, validate=True)
        except (binascii.Error, ValueError):
            raise ScramError("the server's salt is not base64") from None
        if not salt:
            raise ScramError("the server's salt is empty")
        if not iterations_text.isascii() or not iterations_text.isdigit() or len(iterations_text) > 9:
            raise ScramError(f"the server's iteration count {iterations_text[:20]!r} is not a number")
        iterations = int(iterations_text)
        if not min_iterations <= iterations <= MAX_ITERATIONS:
            raise ScramError(f"the server asks for {iterations} PBKDF2 iterations, outside the "
                             f"{min_iterations} to {MAX_ITERATIONS} this client accepts")

        salted = hashlib.pbkdf2_hmac("sha256", self._secret.encode("utf-8", "surrogateescape"), salt, iterations, 32)
        client_key = _hmac(salted, b"Client Key")
        stored_key = hashlib.sha256(client_key).digest()
        without_proof = f"c={_CHANNEL_BINDING},r={nonce}"
        self._auth_message = ",".join((self._client_first_bare, server_first, without_proof))
        signature = _hmac(stored_key, self._auth_message.encode("utf-8", "surrogateescape"))
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_key = _hmac(salted, b"Server Key")
        return f"{without_proof},p={base64.b64encode(proof).decode()}"

    def verify_server(self, server_final: str) -> None:
        """Returns when the server's last message proves it holds the user's
        keys; ScramError otherwise (a refusal, a malformed message, or a
        signature that does not match)."""
        if not self._auth_message:
            raise ScramError("verify_server before final")
        attrs = _attributes(server_final, "final") if server_final else []
        _refusal(attrs, "final")
        if not attrs or attrs[0][0] != "v":
            raise ScramError("the server's final message carries no signature (v=...)")
        try:
            got = base64.b64decode(attrs[0][1], validate=True)
        except (binascii.Error, ValueError):
            raise ScramError("the server's signature is not base64") from None
        expected = _hmac(self._server_key, self._auth_message.encode("utf-8", "surrogateescape"))
        if not hmac.compare_digest(got, expected):
            raise ScramError("the server's signature does not match: it does not hold this user's keys")
