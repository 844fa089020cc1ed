"""groupcoord: the Python client of the groupcoord consumer-group
coordination service (docs/protocol.md).

* :class:`Consumer` — a blocking member of a group, driven by ``poll()``;
* :class:`AsyncConsumer` — the same for asyncio;
* :class:`Admin` — create, delete, list and describe groups, fetch and rewind offsets;
* :mod:`groupcoord.protocol` — the sans-I/O codec;
* :mod:`groupcoord.member` — the sans-I/O state machine of a member.

Standard library only.
"""

from .admin import Admin
from .aio import AsyncConsumer
from .connection import Security
from .consumer import Callbacks, Consumer, ConsumerConfig, parse_bootstrap
from .errors import ErrorCode, GroupcoordError, ProtocolError
from .protocol import PartitionOffset, TopicPartition

__version__ = "0.1.0"

__all__ = ["Admin", "AsyncConsumer", "Callbacks", "Consumer", "ConsumerConfig", "ErrorCode", "GroupcoordError",
           "PartitionOffset", "ProtocolError", "Security", "TopicPartition", "parse_bootstrap", "__version__"]
