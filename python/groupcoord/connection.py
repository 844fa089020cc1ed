"""Blocking connections to groupcoordd: TCP or TLS, Authenticate on every
connect (SCRAM-SHA-256, Authenticate version 1, unless Security.plain_auth
says version 0), one request at a time with a bounded wait for its answer."""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass

from .errors import ErrorCode, GroupcoordError
from .protocol import (MIN_RESPONSE_BODY, AuthenticateRequest, AuthenticateResponse, FrameStatus, Request, Response,
                       api_name, decode_response, encode_request, peek_frame, response_error)
from .scram import MECHANISM, MIN_ITERATIONS, ScramClient, ScramError

DEFAULT_MAX_FRAME_BYTES = 64 << 20


@dataclass
class Security:
    """Who a connection authenticates as, and whether it speaks TLS; the same
    options as the C++ client's SecurityOptions. Applied on every connect."""

    #: Set: Authenticate as this user right after connecting.
    user: str = ""
    #: The user's secret; never logged, and never sent unless plain_auth.
    secret: str = ""
    #: Set: speak TLS and trust servers whose certificate chains to these CAs (PEM).
    tls_ca_file: str = ""
    #: The server's certificate must name the host connected to (or tls_server_name).
    tls_verify_hostname: bool = True
    #: The name checked and sent as SNI; empty: the host connected to.
    tls_server_name: str = ""
    #: A client certificate (PEM), for servers that ask for one.
    tls_certificate_file: str = ""
    #: Its key (PEM).
    tls_key_file: str = ""
    #: Authenticate with version 0, which sends the secret as it is, instead
    #: of SCRAM-SHA-256 (version 1): only for servers that do not speak
    #: version 1, and only over TLS or a trusted network.
    plain_auth: bool = False

    @property
    def tls(self) -> bool:
        """True when connections speak TLS."""
        return bool(self.tls_ca_file)

    def __repr__(self) -> str:
        return (f"Security(user={self.user!r}, secret=<hidden>, tls_ca_file={self.tls_ca_file!r}, "
                f"tls_verify_hostname={self.tls_verify_hostname}, plain_auth={self.plain_auth})")

    def ssl_context(self) -> ssl.SSLContext:
        """A client context: TLS 1.2 or newer, these CAs, the optional client certificate."""
        try:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.check_hostname = self.tls_verify_hostname
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(cafile=self.tls_ca_file)
            if self.tls_certificate_file:
                ctx.load_cert_chain(self.tls_certificate_file, self.tls_key_file or None)
        except (OSError, ssl.SSLError) as e:
            raise TransportError(f"cannot load the TLS files ({self.tls_ca_file!r}, "
                                 f"{self.tls_certificate_file!r}): {e}") from None
        return ctx

    def server_name(self, host: str) -> str:
        """The name the server's certificate must carry."""
        return self.tls_server_name or host


class TransportError(Exception):
    """No usable answer: the connection failed, closed, timed out, or sent
    bytes that do not decode. The connection is closed."""


def authentication_refused(user: str, code: int, where: str, why: str = "") -> GroupcoordError:
    """The error for a refused Authenticate; ``why`` says more when known."""
    detail = f"the server at {where} refused Authenticate as {user!r}"
    return GroupcoordError(code, detail + (f": {why}" if why else ""))


class Authenticator:
    """The Authenticate calls of one connect, sans I/O: :meth:`start` gives
    the first request and its version, :meth:`answer` takes each answer and
    gives the next request, or None when the connection is authenticated.
    Raises GroupcoordError when the server refuses or, with SCRAM, when it
    does not prove it holds the user's keys (the caller closes the
    connection). Blocking and asyncio connections share it."""

    def __init__(self, security: Security, where: str, min_iterations: int = MIN_ITERATIONS,
                 nonce: str | None = None) -> None:
        self.security = security
        self.where = where
        self.min_iterations = min_iterations
        self._scram: ScramClient | None = None if security.plain_auth else ScramClient(
            security.user, security.secret, nonce)
        self._step = 0

    def start(self) -> tuple[AuthenticateRequest, int]:
        """The first request and the version to send it at."""
        self._step = 1
        if self._scram is None:
            return AuthenticateRequest(self.security.user, self.security.secret), 0
        return AuthenticateRequest(mechanism=MECHANISM, message=self._scram.first().encode()), 1

    def answer(self, response: Response) -> tuple[AuthenticateRequest, int] | None:
        """The next request for the server's answer, or None when done."""
        code = response_error(response)
        message = response.message if isinstance(response, AuthenticateResponse) else b""
        text = message.decode("utf-8", "replace")
        if code != ErrorCode.NONE:
            why = ""
            if self._scram is not None and code == ErrorCode.UNSUPPORTED_VERSION:
                why = ("the server does not speak SCRAM-SHA-256 (Authenticate version 1); only plain auth "
                       "(Security.plain_auth, which sends the secret as it is) would work with it")
            elif self._scram is not None and text:
                why = f"SCRAM-SHA-256: {text[:100]}"
            raise authentication_refused(self.security.user, code, self.where, why)
        if self._scram is None:
            return None
        try:
            if self._step == 1:
                if not message:
                    return None  # NONE without a challenge: authentication is off on that server
                self._step = 2
                final = self._scram.final(text, self.min_iterations)
                return AuthenticateRequest(mechanism=MECHANISM, message=final.encode()), 1
            self._scram.verify_server(text)
        except ScramError as e:
            # The client refuses: a server that lets us in without proving
            # it holds the user's keys is not the server the credentials
            # were made for, and retrying will not change that.
            raise GroupcoordError(ErrorCode.NOT_AUTHORIZED,
                                  f"Authenticate as {self.security.user!r} at {self.where} failed: "
                                  f"SCRAM-SHA-256: {e}") from None
        return None


class Connection:
    """One blocking connection. Not thread-safe."""

    def __init__(self, client_id: str | None = "groupcoord-python", security: Security | None = None,
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.client_id = client_id
        self.security = security or Security()
        self.max_frame_bytes = max_frame_bytes
        self._sock: socket.socket | None = None
        self._buf = bytearray()
        self._next_id = 1
        self._ctx: ssl.SSLContext | None = None
        self.where = ""

    @property
    def is_open(self) -> bool:
        """True while connected."""
        return self._sock is not None

    @property
    def is_tls(self) -> bool:
        """True when the connection speaks TLS."""
        return isinstance(self._sock, ssl.SSLSocket)

    def connect(self, host: str, port: int, timeout: float) -> None:
        """Connects (closing any previous connection), makes the TLS handshake
        and authenticates as the Security says. Raises TransportError when no
        usable connection came of it, GroupcoordError(NOT_AUTHORIZED) when
        the credentials were refused."""
        self.close()
        self.where = f"{host}:{port}"
        deadline = time.monotonic() + timeout
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise TransportError(f"cannot connect to {self.where}: {e}") from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.security.tls:
                if self._ctx is None:
                    self._ctx = self.security.ssl_context()
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                sock = self._ctx.wrap_socket(sock, server_hostname=self.security.server_name(host))
        except ssl.SSLCertVerificationError as e:
            sock.close()
            raise TransportError(f"TLS handshake with {self.where} failed: server certificate refused: "
                                 f"{e.verify_message}") from None
        except (OSError, ssl.SSLError) as e:
            sock.close()
            raise TransportError(f"TLS handshake with {self.where} failed: {e}") from None
        self._sock = sock
        self._buf.clear()
        if self.security.user:
            auth = Authenticator(self.security, self.where)
            step: tuple[AuthenticateRequest, int] | None = auth.start()
            while step is not None:
                r = self.call(step[0], max(deadline - time.monotonic(), 1.0), step[1])
                try:
                    step = auth.answer(r)
                except GroupcoordError:
                    self.close()
                    raise

    def close(self) -> None:
        """Closes the connection; a late answer can never be mistaken for another."""
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        self._sock = None
        self._buf.clear()

    def send(self, request: Request, version: int = 0) -> int:
        """Sends a request at ``version``; returns its correlation id."""
        cid = self._next_id
        self._next_id += 1
        self.send_bytes(encode_request(request, cid, self.client_id, version))
        return cid

    def send_bytes(self, frame: bytes) -> None:
        """Sends bytes as they are."""
        if self._sock is None:
            raise TransportError("not connected")
        try:
            self._sock.settimeout(10.0)
            self._sock.sendall(frame)
        except OSError as e:
            self.close()
            raise TransportError(f"send to {self.where}: {e}") from None

    def receive_frame(self, timeout: float) -> bytes:
        """One whole response frame's body; TransportError on timeout or close."""
        body = self.poll_frame(timeout)
        if body is None:
            self.close()
            raise TransportError(f"no whole response from {self.where} within {timeout:.3f} s")
        return body

    def poll_frame(self, timeout: float) -> bytes | None:
        """One whole response frame's body if it comes within ``timeout``,
        else None with the connection left open (what arrived of a frame is
        kept); TransportError on close or a frame that cannot be trusted."""
        deadline = time.monotonic() + timeout
        while True:
            status, size = peek_frame(self._buf, self.max_frame_bytes, MIN_RESPONSE_BODY)
            if status is FrameStatus.READY:
                body = bytes(self._buf[4:4 + size])
                del self._buf[:4 + size]
                return body
            if status is not FrameStatus.NEED_MORE:
                self.close()
                raise TransportError(f"response frame size {size} from {self.where} cannot be trusted")
            if self._sock is None:
                raise TransportError("not connected")
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                self._sock.settimeout(left)
                chunk = self._sock.recv(65536)
            except (socket.timeout, TimeoutError):
                continue
            except OSError as e:
                self.close()
                raise TransportError(f"receive from {self.where}: {e}") from None
            if not chunk:
                self.close()
                raise TransportError(f"the server at {self.where} closed the connection")
            self._buf += chunk

    def call(self, request: Request, timeout: float, version: int = 0) -> Response:
        """Sends ``request`` at ``version`` and returns its decoded answer."""
        return self.decode(request, self.send(request, version), self.receive_frame(timeout))

    def decode(self, request: Request, cid: int, body: bytes) -> Response:
        """The answer to ``request`` (sent with correlation id ``cid``) in
        ``body``; TransportError, with the connection closed, when it is not."""
        try:
            return decode_answer(request, cid, body, self.where)
        except TransportError:
            self.close()
            raise


def decode_answer(request: Request, cid: int, body: bytes, where: str) -> Response:
    """The answer to ``request`` (correlation id ``cid``) in a response
    frame's ``body`` from ``where``; TransportError when it is not one."""
    try:
        decoded = decode_response(int(request.API), body)
    except Exception as e:
        raise TransportError(f"undecodable {api_name(request.API)} response from {where}: {e!r}") from None
    if decoded.header.correlation_id != cid:
        raise TransportError(f"response correlation id {decoded.header.correlation_id}, expected {cid}")
    return decoded.response

