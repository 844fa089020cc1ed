"""The groupcoord wire codec (docs/protocol.md), sans I/O: version 0 of every
call, versions 1 and 2 of RegisterConsumer (sections 14 and 16), and
version 1 of Authenticate (SCRAM-SHA-256, section "9 Authenticate").

Every message is a dataclass; its wire layout, by version, is the table in
``_layouts.py``, printed from the one description of each message that the
C++ codec is built from (protocol/Messages.h), so the two codecs cannot
differ. ``fields_of(cls, version)`` gives a class's layout at a version and
``cls.FIELDS`` its layout at version 0.
Decoding is bounded: every length and count is checked against the bytes
that remain before anything is built from it, so a sender cannot make the
decoder allocate more than the frame it sent. Malformed input raises
:class:`~groupcoord.errors.ProtocolError` (responses) or yields a
:class:`DecodedRequest` with a status other than ``OK`` (requests), exactly
as sections 8 and 9 of docs/protocol.md say.
"""

from __future__ import annotations

import dataclasses
import enum
import struct
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

from . import _layouts
from .errors import ErrorCode, ProtocolError, to_error_code

PROTOCOL_VERSION = 0
DEFAULT_MAX_FRAME_BYTES = 1 << 20
MIN_REQUEST_BODY = 14  # ApiKey 2 + Version 2 + CorrelationId 8 + ClientId length 2
MIN_RESPONSE_BODY = 10  # Version 2 + CorrelationId 8
MAX_CLIENT_ID_BYTES = 255
MAX_NAME_BYTES = 249
MAX_STRING_BYTES = 32767


class ApiKey(enum.IntEnum):
    """The ApiKey of each call (docs/protocol.md, section 6)."""

    HEARTBEAT = 0
    CREATE_GROUP = 1
    DELETE_GROUP = 2
    REGISTER_CONSUMER = 3
    LIST_GROUPS = 4
    LEAVE_GROUP = 5
    COMMIT_OFFSETS = 6
    FETCH_OFFSETS = 7
    REWIND_CONSUMER = 8
    AUTHENTICATE = 9
    DRAIN_SERVER = 10
    DESCRIBE_GROUP = 11
    DESCRIBE_SERVERS = 12


API_COUNT = len(ApiKey)
CONTROLLER_ONLY = frozenset(
    {ApiKey.HEARTBEAT, ApiKey.DELETE_GROUP, ApiKey.REGISTER_CONSUMER, ApiKey.LEAVE_GROUP,
     ApiKey.COMMIT_OFFSETS, ApiKey.REWIND_CONSUMER, ApiKey.DESCRIBE_GROUP})


def is_controller_only(key: int) -> bool:
    """True for the calls only the group's controller answers."""
    return key in CONTROLLER_ONLY


def api_name(key: int) -> str:
    """``Heartbeat``, ``ListGroups``...; ``UnknownApi`` outside 0..12."""
    if 0 <= key < API_COUNT:
        return "".join(w.capitalize() for w in ApiKey(key).name.split("_"))
    return "UnknownApi"


class GroupState(enum.IntEnum):
    """DescribeGroup's State; an unknown value is kept as an ``int``."""

    LOADING = 0
    STABLE = 1
    REBALANCING = 2
    HANDING_OVER = 3


class RebalanceReason(enum.IntEnum):
    """A RebalanceEvent's Reason; an unknown value is kept as an ``int``."""

    OTHER = 0
    MEMBER_JOINED = 1
    MEMBER_LEFT = 2
    MEMBER_EVICTED = 3
    MEMBER_REPLACED = 4
    TOPIC_APPEARED = 5
    TOPIC_RESIZED = 6
    TOPIC_GONE = 7
    REWIND = 8
    CONTROLLER_TAKEOVER = 9
    HANDOVER = 10


def _known(enum_type: type[enum.IntEnum], value: int) -> int:
    try:
        return enum_type(value)
    except ValueError:
        return value


# ---- Field types ---------------------------------------------------------------
# A field type is one of the strings below, "enum8:N" (an int8 of 0 .. N,
# anything else malformed), the name of a structure (a class below), or
# ("array", element type). The layouts are in _layouts.py.

_INTS = {"i8": ">b", "i16": ">h", "i32": ">i", "i64": ">q", "u16": ">H"}
_SIZES = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "u16": 2, "bool": 1, "str": 2, "error": 2, "bytes": 4}

# The newest version of each call this codec speaks.
MAX_VERSIONS = {ApiKey(k): v for k, v in _layouts.MAX_VERSIONS.items()}


def max_version(api: int) -> int:
    """The newest version of ``api`` this codec reads and writes."""
    return MAX_VERSIONS.get(int(api), 0)


FieldType = Any
_CLASSES: dict[str, type] = {}  # filled at the end of this module
_FIELDS_CACHE: dict[tuple[type, int, int], list] = {}


def _resolve(ftype: Any) -> FieldType:
    if isinstance(ftype, tuple):
        return ("array", _resolve(ftype[1]))
    if ftype in _SIZES or ftype.startswith("enum8:"):
        return ftype
    return _CLASSES[ftype]


def fields_of(cls: type, version: int = 0, newest: int | None = None) -> list:
    """The wire layout of ``cls`` at ``version``: (attribute, type) pairs in
    wire order. ``newest`` is the newest version of the call the message
    belongs to (the class's own by default); a version outside 0 .. newest
    carries only what every version has, as the C++ codec reads an
    error-only answer."""
    if newest is None:
        api = getattr(cls, "API", None)
        newest = max_version(api) if api is not None else 0
    key = (cls, version, newest)
    cached = _FIELDS_CACHE.get(key)
    if cached is not None:
        return cached
    out = []
    for name, ftype, first, last in _layouts.LAYOUTS[cls.__name__]:
        if 0 <= version <= newest:
            carried = first <= version and (last is None or version <= last)
        else:
            carried = first == 0 and last is None
        if carried:
            out.append((name, _resolve(ftype)))
    _FIELDS_CACHE[key] = out
    return out


def _smallest(ftype: FieldType, version: int = 0) -> int:
    """The smallest encoding of a field (docs/protocol.md, section 5)."""
    if isinstance(ftype, tuple):
        return 4
    if isinstance(ftype, str):
        return 1 if ftype.startswith("enum8:") else _SIZES[ftype]
    return sum(_smallest(t, version) for _, t in fields_of(ftype, version, version))


class _Reader:
    """Bounded big-endian reads over one body; failures name field and offset."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes | memoryview, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def fail(self, name: str, what: str) -> ProtocolError:
        return ProtocolError(f"{name} at offset {self.pos}: {what}")

    def take(self, n: int, name: str) -> bytes:
        if self.remaining() < n:
            raise self.fail(name, f"needs {n} bytes, {self.remaining()} remain")
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    def int(self, kind: str, name: str) -> int:
        return struct.unpack(_INTS[kind], self.take(_SIZES[kind], name))[0]

    def bool(self, name: str) -> bool:
        b = self.take(1, name)[0]
        if b > 1:
            self.pos -= 1
            raise self.fail(name, f"bool byte 0x{b:02x} is neither 0 nor 1")
        return b == 1

    def string(self, name: str, nullable: bool = False) -> str | None:
        n = self.int("i16", name)
        if n == -1 and nullable:
            return None
        if n < 0:
            self.pos -= 2
            raise self.fail(name, f"string length {n}" + (" (null is allowed only for ClientId)" if n == -1 else ""))
        if n > self.remaining():
            self.pos -= 2
            raise self.fail(name, f"string length {n} is longer than the {self.remaining()} bytes that remain")
        return self.take(n, name).decode("utf-8", "surrogateescape")

    def count(self, name: str, element_size: int) -> int:
        n = self.int("i32", name)
        if n == -1:
            return 0
        if n < -1:
            self.pos -= 4
            raise self.fail(name, f"array count {n}")
        if n * element_size > self.remaining():
            self.pos -= 4
            raise self.fail(name, f"array count {n} of elements of at least {element_size} bytes "
                                  f"cannot fit in the {self.remaining()} bytes that remain")
        return n

    def value(self, ftype: FieldType, name: str, version: int = 0, newest: int = 0) -> Any:
        if isinstance(ftype, tuple):
            element = ftype[1]
            n = self.count(name, _smallest(element, version if 0 <= version <= newest else 0))
            return [self.value(element, f"{name}[{i}]", version, newest) for i in range(n)]
        if ftype == "str":
            return self.string(name)
        if ftype == "bool":
            return self.bool(name)
        if ftype == "bytes":
            n = self.int("i32", name)
            if n < 0:
                return b""  # -1: empty, as a count of -1 is
            return self.take(n, name)
        if ftype == "error":
            return to_error_code(self.int("i16", name))
        if isinstance(ftype, str) and ftype.startswith("enum8:"):
            largest = int(ftype[6:])
            v = self.int("i8", name)
            if not 0 <= v <= largest:
                self.pos -= 1
                raise self.fail(name, f"enum byte {v} is not one of 0 to {largest}")
            return v
        if isinstance(ftype, str):
            return self.int(ftype, name)
        return self.message(ftype, name, version, newest)

    def message(self, cls: type, prefix: str = "", version: int = 0, newest: int | None = None) -> Any:
        if newest is None:
            api = getattr(cls, "API", None)
            newest = max_version(api) if api is not None else 0
        values = {}
        for fname, ftype in fields_of(cls, version, newest):
            values[fname] = self.value(ftype, f"{prefix}.{fname}" if prefix else fname, version, newest)
        return cls(**values)


def _put_string(out: bytearray, text: str | bytes | None) -> None:
    if text is None:
        out += b"\xff\xff"
        return
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")
    raw = raw[:MAX_STRING_BYTES]
    out += struct.pack(">h", len(raw))
    out += raw


def _put(out: bytearray, ftype: FieldType, value: Any, version: int = 0, newest: int = 0) -> None:
    if isinstance(ftype, tuple):
        out += struct.pack(">i", len(value))
        for v in value:
            _put(out, ftype[1], v, version, newest)
    elif ftype == "str":
        _put_string(out, value)
    elif ftype == "bool":
        out.append(1 if value else 0)
    elif ftype == "bytes":
        raw = bytes(value)
        out += struct.pack(">i", len(raw))
        out += raw
    elif ftype == "error":
        out += struct.pack(">h", int(value))
    elif isinstance(ftype, str) and ftype.startswith("enum8:"):
        out += struct.pack(">b", int(value))
    elif isinstance(ftype, str):
        out += struct.pack(_INTS[ftype], int(value))
    else:
        _put_message(out, value, version, newest)


def _put_message(out: bytearray, message: Any, version: int = 0, newest: int | None = None) -> None:
    cls = type(message)
    if newest is None:
        api = getattr(cls, "API", None)
        newest = max_version(api) if api is not None else 0
    for fname, ftype in fields_of(cls, version, newest):
        _put(out, ftype, getattr(message, fname), version, newest)


# ---- Shared structures ---------------------------------------------------------------

@dataclass(frozen=True, order=True)
class TopicPartition:
    """One partition of one topic."""

    topic: str
    partition: int


@dataclass(frozen=True)
class PartitionOffset:
    """A partition and an offset (-1: nothing committed)."""

    topic: str
    partition: int
    offset: int

    @property
    def tp(self) -> TopicPartition:
        """The partition alone."""
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class MemberMetadata:
    """One member as a RegisterConsumer answer of version 1 or 2 lists it."""

    consumer_id: str
    metadata: bytes = b""
    rack: str = ""


@dataclass(frozen=True)
class PartitionError:
    """A partition and the outcome of a call for it."""

    topic: str
    partition: int
    error: int


@dataclass(frozen=True)
class Broker:
    """A groupcoordd server; BrokerId -1, Host "" and Port 0 mean "no controller"."""

    broker_id: int = -1
    host: str = ""
    port: int = 0

    def is_none(self) -> bool:
        """True for the "no controller at the moment" Broker."""
        return self.broker_id == -1 and self.host == "" and self.port == 0


@dataclass
class GroupInfo:
    """One group as ListGroups describes it."""

    name: str
    error: int = ErrorCode.NONE
    members: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    controller: Broker = field(default_factory=Broker)
    session_timeout_ms: int = -1
    generation: int = -1
    ephemeral: bool = False
    mode: int = 0  # version 1: 0 server, 1 client
    kafka: bool = False  # version 2: created by the Kafka port
    protocol_type: str = ""  # version 2: a Kafka group's protocol type ("consumer"); "" none yet
    protocol_name: str = ""  # version 2: its chosen protocol, the assignor ("range"); "" none yet


@dataclass
class TopicState:
    """A topic of a described group; partitions -1: unknown or unreadable."""

    topic: str
    partitions: int


@dataclass
class MemberState:
    """A member of a described group: where it connects from and what it holds."""

    consumer_id: str
    client_id: str = ""
    host: str = ""
    port: int = 0
    joined_at_ms: int = -1
    last_heard_ms: int = -1
    held: list[TopicPartition] = field(default_factory=list)
    waiting: list[TopicPartition] = field(default_factory=list)
    metadata: bytes = b""  # version 1
    rack: str = ""  # version 1


@dataclass
class RebalanceEvent:
    """Why a described group's generation moved (or its controller changed)."""

    time_ms: int
    generation: int
    reason: int
    count: int = 1
    consumer_id: str = ""
    client_id: str = ""
    host: str = ""
    subject: str = ""
    value: int = -1
    detail: str = ""

    def __post_init__(self) -> None:
        self.reason = _known(RebalanceReason, self.reason)


# ---- Requests ----------------------------------------------------------------------

@dataclass
class HeartbeatRequest:
    """ApiKey 0."""

    group: str
    consumer_id: str
    generation: int
    # v1: how long the controller may hold the answer while nothing changes
    # for the member (docs/protocol.md §20); 0: at once. v2: the same fields;
    # the member takes the generation of a NONE answer (§21).
    wait_ms: int = 0
    API: ClassVar = ApiKey.HEARTBEAT


@dataclass
class CreateGroupRequest:
    """ApiKey 1."""

    group: str
    session_timeout_ms: int
    topics: list[str] = field(default_factory=list)
    ephemeral: bool = False
    mode: int = 0  # version 1: 0 server, 1 client
    API: ClassVar = ApiKey.CREATE_GROUP


@dataclass
class DeleteGroupRequest:
    """ApiKey 2."""

    group: str
    API: ClassVar = ApiKey.DELETE_GROUP


@dataclass
class RegisterConsumerRequest:
    """ApiKey 3; an empty consumer id asks for a new member. Version 1 adds
    the member's metadata and rack, version 2 the generation whose member
    list it holds (-1: none)."""

    group: str
    consumer_id: str = ""
    owned: list[TopicPartition] = field(default_factory=list)
    metadata: bytes = b""
    rack: str = ""
    known_generation: int = -1
    API: ClassVar = ApiKey.REGISTER_CONSUMER


@dataclass
class ListGroupsRequest:
    """ApiKey 4; no names: every group."""

    groups: list[str] = field(default_factory=list)
    API: ClassVar = ApiKey.LIST_GROUPS


@dataclass
class LeaveGroupRequest:
    """ApiKey 5."""

    group: str
    consumer_id: str
    API: ClassVar = ApiKey.LEAVE_GROUP


@dataclass
class CommitOffsetsRequest:
    """ApiKey 6."""

    group: str
    consumer_id: str
    generation: int
    offsets: list[PartitionOffset] = field(default_factory=list)
    API: ClassVar = ApiKey.COMMIT_OFFSETS


@dataclass
class FetchOffsetsRequest:
    """ApiKey 7; no topics: every topic."""

    group: str
    topics: list[str] = field(default_factory=list)
    API: ClassVar = ApiKey.FETCH_OFFSETS


@dataclass
class RewindConsumerRequest:
    """ApiKey 8."""

    group: str
    offsets: list[PartitionOffset] = field(default_factory=list)
    API: ClassVar = ApiKey.REWIND_CONSUMER


@dataclass
class AuthenticateRequest:
    """ApiKey 9. Version 0 carries the user and the secret, which travels as
    it is (use TLS on untrusted networks). Version 1 carries instead a
    mechanism ("SCRAM-SHA-256") and one client message of its exchange
    (groupcoord.scram), which names the user; the secret never travels."""

    user: str = ""
    secret: str = ""
    mechanism: str = ""
    message: bytes = b""
    API: ClassVar = ApiKey.AUTHENTICATE

    def __repr__(self) -> str:  # the secret (and the SCRAM proof) stay out of logs
        if self.mechanism or self.message:
            return (f"AuthenticateRequest(mechanism={self.mechanism!r}, "
                    f"message=<{len(self.message)} bytes hidden>)")
        return f"AuthenticateRequest(user={self.user!r}, secret=<hidden>)"


@dataclass
class DrainServerRequest:
    """ApiKey 10."""

    server_id: int
    drain: bool = True
    API: ClassVar = ApiKey.DRAIN_SERVER


@dataclass
class DescribeGroupRequest:
    """ApiKey 11."""

    group: str
    API: ClassVar = ApiKey.DESCRIBE_GROUP


@dataclass
class DescribeServersRequest:
    """ApiKey 12: no field, the header is the whole request."""

    API: ClassVar = ApiKey.DESCRIBE_SERVERS


Request = Union[HeartbeatRequest, CreateGroupRequest, DeleteGroupRequest, RegisterConsumerRequest,
                ListGroupsRequest, LeaveGroupRequest, CommitOffsetsRequest, FetchOffsetsRequest,
                RewindConsumerRequest, AuthenticateRequest, DrainServerRequest, DescribeGroupRequest,
                DescribeServersRequest]
REQUEST_TYPES: list[type] = [HeartbeatRequest, CreateGroupRequest, DeleteGroupRequest, RegisterConsumerRequest,
                             ListGroupsRequest, LeaveGroupRequest, CommitOffsetsRequest, FetchOffsetsRequest,
                             RewindConsumerRequest, AuthenticateRequest, DrainServerRequest, DescribeGroupRequest,
                             DescribeServersRequest]


# ---- Responses ---------------------------------------------------------------------

@dataclass
class HeartbeatResponse:
    """ApiKey 0."""

    generation: int = -1
    error: int = ErrorCode.NONE
    API: ClassVar = ApiKey.HEARTBEAT


@dataclass
class CreateGroupResponse:
    """ApiKey 1."""

    group: str = ""
    error: int = ErrorCode.NONE
    controller: Broker = field(default_factory=Broker)
    API: ClassVar = ApiKey.CREATE_GROUP


@dataclass
class DeleteGroupResponse:
    """ApiKey 2."""

    group: str = ""
    error: int = ErrorCode.NONE
    API: ClassVar = ApiKey.DELETE_GROUP


@dataclass
class RegisterConsumerResponse:
    """ApiKey 3; partitions carry their committed offset (-1: none).

    Version 1 adds the assignment mode and every member's metadata. Version
    2 sizes the answer by the member's share: ``members`` is empty, and in
    server mode so is ``member_data``; ``member_count`` counts the members;
    in client mode ``member_data`` is the whole list when ``list_base`` is
    -1, or else what was added or changed since generation ``list_base``,
    with ``removed_members`` those gone since."""

    group: str = ""
    consumer_id: str = ""
    generation: int = -1
    members: list[str] = field(default_factory=list)
    partitions: list[PartitionOffset] = field(default_factory=list)
    error: int = ErrorCode.NONE
    mode: int = 0
    member_data: list[MemberMetadata] = field(default_factory=list)
    member_count: int = -1
    list_base: int = -1
    removed_members: list[str] = field(default_factory=list)
    API: ClassVar = ApiKey.REGISTER_CONSUMER


@dataclass
class ListGroupsResponse:
    """ApiKey 4."""

    groups: list[GroupInfo] = field(default_factory=list)
    error: int = ErrorCode.NONE
    API: ClassVar = ApiKey.LIST_GROUPS


@dataclass
class LeaveGroupResponse:
    """ApiKey 5."""

    error: int = ErrorCode.NONE
    API: ClassVar = ApiKey.LEAVE_GROUP


@dataclass
class CommitOffsetsResponse:
    """ApiKey 6."""

    results: list[PartitionError] = field(default_factory=list)
    error: int = ErrorCode.NONE
    API: ClassVar = ApiKey.COMMIT_OFFSETS


@dataclass
class FetchOffsetsResponse:
    """ApiKey 7."""

    offsets: list[PartitionOffset] = field(default_factory=list)
    error: int = ErrorCode.NONE
    API: ClassVar = ApiKey.FETCH_OFFSETS


@dataclass
class RewindConsumerResponse:
    """ApiKey 8."""

    results: list[PartitionError] = field(default_factory=list)
    error: int = ErrorCode.NONE
    API: ClassVar = ApiKey.REWIND_CONSUMER


@dataclass
class AuthenticateResponse:
    """ApiKey 9. Version 1 adds the server's message of the SCRAM exchange
    (empty in an error-only answer, and when authentication is off)."""

    error: int = ErrorCode.NONE
    message: bytes = b""
    API: ClassVar = ApiKey.AUTHENTICATE


@dataclass
class DrainServerResponse:
    """ApiKey 10."""

    error: int = ErrorCode.NONE
    API: ClassVar = ApiKey.DRAIN_SERVER


@dataclass
class DescribeGroupResponse:
    """ApiKey 11: what the group's controller knows about the group."""

    group: str = ""
    error: int = ErrorCode.NONE
    controller: Broker = field(default_factory=Broker)
    state: int = GroupState.LOADING
    session_timeout_ms: int = -1
    ephemeral: bool = False
    generation: int = -1
    topics: list[TopicState] = field(default_factory=list)
    members: list[MemberState] = field(default_factory=list)
    offsets: list[PartitionOffset] = field(default_factory=list)
    history: list[RebalanceEvent] = field(default_factory=list)
    mode: int = 0  # version 1: 0 server, 1 client
    kafka: bool = False  # version 2: created by the Kafka port
    protocol_type: str = ""  # version 2: a Kafka group's protocol type ("consumer"); "" none yet
    protocol_name: str = ""  # version 2: its chosen protocol, the assignor ("range"); "" none yet
    API: ClassVar = ApiKey.DESCRIBE_GROUP

    def __post_init__(self) -> None:
        self.state = _known(GroupState, self.state)


@dataclass
class ServerPlacement:
    """One live server as DescribeServers describes it: where clients reach
    it, its state, its load (the weights of the groups it controls) and its
    load once the groups that should move have moved."""

    server_id: int = -1
    host: str = ""
    port: int = 0
    drained: bool = False
    settled: bool = False
    candidate: bool = False
    load: int = 0
    groups: int = 0
    placed: int = 0


@dataclass
class GroupMove:
    """A group whose target is not its controller (-1: none)."""

    group: str = ""
    weight: int = 0
    controller: int = -1
    target: int = -1


@dataclass
class DescribeServersResponse:
    """ApiKey 12: the fleet's placement as the answering server computes it
    (docs/protocol.md, "12 DescribeServers")."""

    error: int = ErrorCode.NONE
    server: int = -1
    epsilon_permille: int = -1
    margin_permille: int = -1
    weighting: str = ""
    group_weight: int = -1
    total: int = -1
    bound: int = -1
    complete: bool = False
    servers: list[ServerPlacement] = field(default_factory=list)
    moves: list[GroupMove] = field(default_factory=list)
    API: ClassVar = ApiKey.DESCRIBE_SERVERS


@dataclass
class ErrorOnlyResponse:
    """UNKNOWN_API, UNSUPPORTED_VERSION or INVALID_REQUEST: the header and one ErrorCode."""

    error: int = ErrorCode.NONE


Response = Union[HeartbeatResponse, CreateGroupResponse, DeleteGroupResponse, RegisterConsumerResponse,
                 ListGroupsResponse, LeaveGroupResponse, CommitOffsetsResponse, FetchOffsetsResponse,
                 RewindConsumerResponse, AuthenticateResponse, DrainServerResponse, DescribeGroupResponse,
                 DescribeServersResponse, ErrorOnlyResponse]
RESPONSE_TYPES: list[type] = [HeartbeatResponse, CreateGroupResponse, DeleteGroupResponse, RegisterConsumerResponse,
                              ListGroupsResponse, LeaveGroupResponse, CommitOffsetsResponse, FetchOffsetsResponse,
                              RewindConsumerResponse, AuthenticateResponse, DrainServerResponse,
                              DescribeGroupResponse, DescribeServersResponse]
_LONE_CODE = {ApiKey.LEAVE_GROUP: LeaveGroupResponse, ApiKey.AUTHENTICATE: AuthenticateResponse,
              ApiKey.DRAIN_SERVER: DrainServerResponse}

# Every class the layouts name; each gets FIELDS, its layout at version 0.
_CLASSES.update({cls.__name__: cls for cls in [TopicPartition, PartitionOffset, MemberMetadata, PartitionError,
                                               Broker, GroupInfo, TopicState, MemberState, RebalanceEvent,
                                               ServerPlacement, GroupMove, ErrorOnlyResponse,
                                               *REQUEST_TYPES, *RESPONSE_TYPES]})
for _cls in _CLASSES.values():
    _cls.FIELDS = fields_of(_cls, 0)  # type: ignore[attr-defined]


# ---- Headers and frames ------------------------------------------------------------

@dataclass
class RequestHeader:
    """ApiKey, Version, CorrelationId and the nullable ClientId."""

    api_key: int
    version: int = PROTOCOL_VERSION
    correlation_id: int = 0
    client_id: str | None = None


@dataclass
class ResponseHeader:
    """Version and CorrelationId, copied from the request."""

    version: int = PROTOCOL_VERSION
    correlation_id: int = 0


class FrameStatus(enum.Enum):
    """What :func:`peek_frame` found at the front of a buffer."""

    NEED_MORE = "need more"
    READY = "ready"
    TOO_SMALL = "too small"
    TOO_LARGE = "too large"


def peek_frame(buffered: bytes | bytearray | memoryview, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
               min_body: int = MIN_RESPONSE_BODY) -> tuple[FrameStatus, int]:
    """Judges the frame at the front of ``buffered``: its status and body size
    (the size is 0 while fewer than 4 bytes are there)."""
    if len(buffered) < 4:
        return FrameStatus.NEED_MORE, 0
    size = struct.unpack_from(">i", buffered, 0)[0]
    if size < 0:
        return FrameStatus.TOO_LARGE, size
    if size < min_body:
        return FrameStatus.TOO_SMALL, size
    if size > max_frame_bytes:
        return FrameStatus.TOO_LARGE, size
    if len(buffered) - 4 < size:
        return FrameStatus.NEED_MORE, size
    return FrameStatus.READY, size


def _frame(body: bytearray) -> bytes:
    return struct.pack(">i", len(body)) + bytes(body)


def encode_request(request: Request, correlation_id: int, client_id: str | None = None,
                   version: int = PROTOCOL_VERSION) -> bytes:
    """The whole frame (Size included) of ``request``. The ApiKey written is
    the request type's, so header and body cannot disagree."""
    out = bytearray(struct.pack(">hhq", int(request.API), version, correlation_id))
    _put_string(out, client_id)
    _put_message(out, request, version)
    return _frame(out)


def encode_response(response: Response, correlation_id: int, version: int = PROTOCOL_VERSION) -> bytes:
    """The whole frame (Size included) of ``response``."""
    out = bytearray(struct.pack(">hq", version, correlation_id))
    _put_message(out, response, version)
    return _frame(out)


def encode_raw_request(api_key: int, correlation_id: int, client_id: str | None, body: bytes = b"",
                       version: int = PROTOCOL_VERSION) -> bytes:
    """A frame with any ApiKey and body bytes, for tests of what servers refuse."""
    out = bytearray(struct.pack(">hhq", api_key, version, correlation_id))
    _put_string(out, client_id)
    out += body
    return _frame(out)


@dataclass
class DecodedResponse:
    """A response body that decoded."""

    header: ResponseHeader
    response: Response


def decode_response(api: int, body: bytes | bytearray | memoryview) -> DecodedResponse:
    """Decodes a response body (without its Size) as the answer to a call of
    ``api``. Raises ProtocolError on any malformed input (section 8)."""
    r = _Reader(body)
    if r.remaining() < MIN_RESPONSE_BODY:
        raise ProtocolError(f"response body of {len(body)} bytes, shorter than the "
                            f"{MIN_RESPONSE_BODY}-byte response header")
    header = ResponseHeader(r.int("i16", "Version"), r.int("i64", "CorrelationId"))
    if r.remaining() == 2:
        # An error-only answer; LeaveGroup, Authenticate and DrainServer
        # responses have the same shape (Authenticate's at version 0) and
        # are read as their own type: an Authenticate answer of any version
        # then has an empty message.
        cls = _LONE_CODE.get(api, ErrorOnlyResponse)  # type: ignore[call-overload]
        return DecodedResponse(header, r.message(cls))
    if not 0 <= api < API_COUNT:
        raise ProtocolError(f"response to unknown ApiKey {api} with {r.remaining()} bytes after the header, "
                            f"not an error-only answer")
    if not 0 <= header.version <= max_version(api):
        raise ProtocolError(f"{api_name(api)} response of version {header.version}, "
                            f"this codec reads versions 0 to {max_version(api)}")
    try:
        response = r.message(RESPONSE_TYPES[api], version=header.version)
    except ProtocolError as e:
        raise ProtocolError(f"{api_name(api)} response: {e.detail}") from None
    if r.remaining():
        raise ProtocolError(f"{api_name(api)} response: {r.remaining()} bytes left after the last field "
                            f"at offset {r.pos}")
    return DecodedResponse(header, response)


class DecodeStatus(enum.Enum):
    """The outcome of :func:`decode_request`."""

    OK = "ok"
    INVALID_REQUEST = "invalid request"
    UNKNOWN_API = "unknown api"
    UNSUPPORTED_VERSION = "unsupported version"


@dataclass
class DecodedRequest:
    """What :func:`decode_request` made of a body: the request only when OK."""

    status: DecodeStatus
    header: RequestHeader
    request: Request | None = None
    detail: str = ""


def decode_request(body: bytes | bytearray | memoryview) -> DecodedRequest:
    """Decodes a request body as a server does (docs/protocol.md, section 8),
    in its order of checks. Never raises for malformed input."""
    r = _Reader(body)
    header = RequestHeader(api_key=0, version=0, correlation_id=0)
    if len(body) < MIN_REQUEST_BODY:
        if len(body) >= 2:
            header.api_key = r.int("i16", "ApiKey")
        if len(body) >= 4:
            header.version = r.int("i16", "Version")
        if len(body) >= 12:
            header.correlation_id = r.int("i64", "CorrelationId")
        return DecodedRequest(DecodeStatus.INVALID_REQUEST, header,
                              detail=f"request body of {len(body)} bytes, shorter than the "
                                     f"{MIN_REQUEST_BODY}-byte request header")
    header.api_key = r.int("i16", "ApiKey")
    header.version = r.int("i16", "Version")
    header.correlation_id = r.int("i64", "CorrelationId")
    client_id_ok = True
    try:
        client_id = r.string("ClientId", nullable=True)
    except ProtocolError as e:
        client_id_ok, client_detail = False, e.detail
    else:
        if client_id is not None and len(client_id.encode("utf-8", "surrogateescape")) > MAX_CLIENT_ID_BYTES:
            client_id_ok, client_detail = False, f"ClientId of more than {MAX_CLIENT_ID_BYTES} bytes"
        else:
            header.client_id = client_id
    if not 0 <= header.api_key < API_COUNT:
        return DecodedRequest(DecodeStatus.UNKNOWN_API, header, detail=f"unknown ApiKey {header.api_key}")
    if not 0 <= header.version <= max_version(header.api_key):
        return DecodedRequest(DecodeStatus.UNSUPPORTED_VERSION, header,
                              detail=f"{api_name(header.api_key)} version {header.version}")
    if not client_id_ok:
        return DecodedRequest(DecodeStatus.INVALID_REQUEST, header, detail=client_detail)
    try:
        request = r.message(REQUEST_TYPES[header.api_key], version=header.version)
        if r.remaining():
            raise ProtocolError(f"{r.remaining()} bytes left after the last field at offset {r.pos}")
    except ProtocolError as e:
        return DecodedRequest(DecodeStatus.INVALID_REQUEST, header,
                              detail=f"{api_name(header.api_key)} request: {e.detail}")
    return DecodedRequest(DecodeStatus.OK, header, request)


# ---- Semantics ---------------------------------------------------------------------

_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def is_valid_name(name: str) -> bool:
    """Group, topic and consumer names: 1 to 249 of ``A-Z a-z 0-9 . _ -``, not ``.`` or ``..``."""
    raw = name.encode("utf-8", "surrogateescape")
    if not 0 < len(raw) <= MAX_NAME_BYTES or raw in (b".", b".."):
        return False
    return all(b in _NAME_BYTES for b in raw)


def validate_names(request: Request) -> int:
    """The first name failure of a decoded request (section 4), or NONE."""
    if isinstance(request, (ListGroupsRequest, AuthenticateRequest, DescribeServersRequest)):
        return ErrorCode.NONE
    if isinstance(request, DrainServerRequest):
        return ErrorCode.INVALID_REQUEST if request.server_id < 0 else ErrorCode.NONE
    if not is_valid_name(request.group):
        return ErrorCode.INVALID_GROUP_NAME
    consumer = getattr(request, "consumer_id", None)
    if consumer is not None:
        may_be_empty = isinstance(request, RegisterConsumerRequest)
        if not (may_be_empty and consumer == "") and not is_valid_name(consumer):
            return ErrorCode.INVALID_CONSUMER_ID
    topics: list[str] = []
    if isinstance(request, (CreateGroupRequest, FetchOffsetsRequest)):
        topics = request.topics
    elif isinstance(request, RegisterConsumerRequest):
        topics = [tp.topic for tp in request.owned]
    elif isinstance(request, (CommitOffsetsRequest, RewindConsumerRequest)):
        topics = [po.topic for po in request.offsets]
    if any(not is_valid_name(t) for t in topics):
        return ErrorCode.INVALID_GROUP_NAME
    return ErrorCode.NONE


def error_response(request: Request, code: int) -> Response:
    """The API's full response when the whole request fails: group and member
    echoed where the response has them, numbers -1, arrays empty."""
    cls = RESPONSE_TYPES[request.API]
    values: dict[str, Any] = {"error": code}
    names = {f.name for f in dataclasses.fields(cls)}
    if "group" in names:
        values["group"] = request.group  # type: ignore[union-attr]
    if "consumer_id" in names:
        values["consumer_id"] = request.consumer_id  # type: ignore[union-attr]
    return cls(**values)


def response_error(response: Response) -> int:
    """The top-level ErrorCode of any response."""
    return response.error
