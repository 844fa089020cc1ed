"""Error codes of the groupcoord protocol (docs/protocol.md, section 7) and
the exception the client raises for them."""

from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """The protocol's ErrorCode values. A code this build does not know is
    kept as a plain ``int`` by the codec (docs/protocol.md, section 9)."""

    NONE = 0
    UNKNOWN_SERVER_ERROR = -1
    INVALID_REQUEST = 1
    UNSUPPORTED_VERSION = 2
    UNKNOWN_API = 3
    UNKNOWN_GROUP = 10
    GROUP_ALREADY_EXISTS = 11
    GROUP_NOT_EMPTY = 12
    INVALID_GROUP_NAME = 13
    INVALID_SESSION_TIMEOUT = 14
    NOT_CONTROLLER = 15
    CONTROLLER_NOT_AVAILABLE = 16
    UNKNOWN_CONSUMER = 17
    REBALANCE_NEEDED = 18
    NOT_OWNER = 19
    UNKNOWN_TOPIC_OR_PARTITION = 20
    INVALID_OFFSET = 21
    NOT_AUTHORIZED = 22
    INVALID_CONSUMER_ID = 23


_VALUES = {int(c) for c in ErrorCode}

# What to do about each code, one sentence for people.
_ADVICE: dict[int, str] = {
    ErrorCode.NONE: "Nothing to do: the call succeeded.",
    ErrorCode.UNKNOWN_SERVER_ERROR: "The server failed unexpectedly; retry, and read the server's log if it persists.",
    ErrorCode.INVALID_REQUEST: "The server could not decode the request; check that client and server speak protocol version 0.",
    ErrorCode.UNSUPPORTED_VERSION: "The server does not speak this protocol version; use a client of the server's version.",
    ErrorCode.UNKNOWN_API: "The server does not know this call; upgrade the server.",
    ErrorCode.UNKNOWN_GROUP: "The group does not exist; create it first (Admin.create_group).",
    ErrorCode.GROUP_ALREADY_EXISTS: "The group exists with other settings; use those settings or delete the group first.",
    ErrorCode.GROUP_NOT_EMPTY: "The group still has members; stop them (or wait for their session timeout) before deleting it.",
    ErrorCode.INVALID_GROUP_NAME: "Group and topic names are 1 to 249 of A-Z a-z 0-9 . _ - (not '.' or '..'); rename it.",
    ErrorCode.INVALID_SESSION_TIMEOUT: "The session timeout is outside the server's bounds; pick one within them.",
    ErrorCode.NOT_CONTROLLER: "Another server controls the group; find its controller with ListGroups and retry there.",
    ErrorCode.CONTROLLER_NOT_AVAILABLE: "No controller can answer for the group right now; retry after a short backoff.",
    ErrorCode.UNKNOWN_CONSUMER: "The member is not in the group (evicted or left); register again.",
    ErrorCode.REBALANCE_NEEDED: "The group moved to a new generation; register again.",
    ErrorCode.NOT_OWNER: "This member does not hold the partition now; commit only what it was assigned.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "The topic or partition is not known to the cluster; create it or fix the name.",
    ErrorCode.INVALID_OFFSET: "Offsets are 0 or more; commit a non-negative offset.",
    ErrorCode.NOT_AUTHORIZED: "The credentials are wrong or the user's role may not make this call; fix the user, secret or role.",
    ErrorCode.INVALID_CONSUMER_ID: "Consumer ids are 1 to 249 of A-Z a-z 0-9 . _ -; pick a valid id or leave it empty.",
}


def to_error_code(value: int) -> ErrorCode | int:
    """The ErrorCode member for ``value``, or ``value`` itself when unknown."""
    return ErrorCode(value) if value in _VALUES else value


def error_name(code: int) -> str:
    """The protocol's name of ``code``; ``UNKNOWN_ERROR_CODE`` for others."""
    return ErrorCode(code).name if code in _VALUES else "UNKNOWN_ERROR_CODE"


def error_from_name(name: str) -> ErrorCode:
    """The ErrorCode called ``name``; ValueError when there is none."""
    try:
        return ErrorCode[name]
    except KeyError:
        raise ValueError(f"no error code is named {name!r}") from None


def error_advice(code: int) -> str:
    """A sentence saying what to do about ``code``."""
    return _ADVICE.get(code, f"The server answered error code {code}, which this client does not know; upgrade it.")


def is_retriable(code: int) -> bool:
    """True for the codes a client retries after finding the controller again."""
    return code in (ErrorCode.NOT_CONTROLLER, ErrorCode.CONTROLLER_NOT_AVAILABLE)


class GroupcoordError(Exception):
    """A call failed. ``code`` is the protocol's ErrorCode, ``name`` its
    name, ``detail`` what failed and where, ``advice`` what to do."""

    def __init__(self, code: int, detail: str = "", *, unreachable: bool = False) -> None:
        self.code: int = code
        self.name: str = error_name(code)
        self.detail: str = detail
        self.advice: str = error_advice(code)
        #: No server could be connected to at all (the code is then CONTROLLER_NOT_AVAILABLE).
        self.unreachable: bool = unreachable
        text = self.name + (f": {detail}" if detail else "") + f". {self.advice}"
        super().__init__(text)


class ProtocolError(Exception):
    """Bytes that do not decode as docs/protocol.md says; ``detail`` names the field and offset."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)
