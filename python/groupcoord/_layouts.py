"""The wire layout of every groupcoord message, by version (docs/protocol.md).

Printed from the messages' descriptions in protocol/Messages.h by
groupcoord-messages: do not edit; change the description and run
scripts/dev.sh generate. Each field is (attribute, type, first version,
last version or None); the types are those of protocol.py's codec.
"""

# The newest version of each call, by ApiKey.
MAX_VERSIONS = {
    0: 2,  # Heartbeat
    1: 1,  # CreateGroup
    2: 0,  # DeleteGroup
    3: 2,  # RegisterConsumer
    4: 2,  # ListGroups
    5: 0,  # LeaveGroup
    6: 0,  # CommitOffsets
    7: 0,  # FetchOffsets
    8: 0,  # RewindConsumer
    9: 1,  # Authenticate
    10: 0,  # DrainServer
    11: 2,  # DescribeGroup
    12: 0,  # DescribeServers
}

LAYOUTS = {
    "Broker": [
        ("broker_id", "i32", 0, None),
        ("host", "str", 0, None),
        ("port", "u16", 0, None),
    ],
    "TopicPartition": [
        ("topic", "str", 0, None),
        ("partition", "i32", 0, None),
    ],
    "PartitionOffset": [
        ("topic", "str", 0, None),
        ("partition", "i32", 0, None),
        ("offset", "i64", 0, None),
    ],
    "PartitionError": [
        ("topic", "str", 0, None),
        ("partition", "i32", 0, None),
        ("error", "error", 0, None),
    ],
    "MemberMetadata": [
        ("consumer_id", "str", 0, None),
        ("metadata", "bytes", 0, None),
        ("rack", "str", 0, None),
    ],
    "GroupInfo": [
        ("name", "str", 0, None),
        ("error", "error", 0, None),
        ("members", ("array", "str"), 0, None),
        ("topics", ("array", "str"), 0, None),
        ("controller", "Broker", 0, None),
        ("session_timeout_ms", "i64", 0, None),
        ("generation", "i64", 0, None),
        ("ephemeral", "bool", 0, None),
        ("mode", "enum8:1", 1, None),
        ("kafka", "bool", 2, None),
        ("protocol_type", "str", 2, None),
        ("protocol_name", "str", 2, None),
    ],
    "TopicState": [
        ("topic", "str", 0, None),
        ("partitions", "i32", 0, None),
    ],
    "MemberState": [
        ("consumer_id", "str", 0, None),
        ("client_id", "str", 0, None),
        ("host", "str", 0, None),
        ("port", "u16", 0, None),
        ("joined_at_ms", "i64", 0, None),
        ("last_heard_ms", "i64", 0, None),
        ("held", ("array", "TopicPartition"), 0, None),
        ("waiting", ("array", "TopicPartition"), 0, None),
        ("metadata", "bytes", 1, None),
        ("rack", "str", 1, None),
    ],
    "RebalanceEvent": [
        ("time_ms", "i64", 0, None),
        ("generation", "i64", 0, None),
        ("reason", "i16", 0, None),
        ("count", "i32", 0, None),
        ("consumer_id", "str", 0, None),
        ("client_id", "str", 0, None),
        ("host", "str", 0, None),
        ("subject", "str", 0, None),
        ("value", "i64", 0, None),
        ("detail", "str", 0, None),
    ],
    "ServerPlacement": [
        ("server_id", "i32", 0, None),
        ("host", "str", 0, None),
        ("port", "i32", 0, None),
        ("drained", "bool", 0, None),
        ("settled", "bool", 0, None),
        ("candidate", "bool", 0, None),
        ("load", "i64", 0, None),
        ("groups", "i32", 0, None),
        ("placed", "i64", 0, None),
    ],
    "GroupMove": [
        ("group", "str", 0, None),
        ("weight", "i64", 0, None),
        ("controller", "i32", 0, None),
        ("target", "i32", 0, None),
    ],
    "HeartbeatRequest": [
        ("group", "str", 0, None),
        ("consumer_id", "str", 0, None),
        ("generation", "i64", 0, None),
        ("wait_ms", "i32", 1, None),
    ],
    "HeartbeatResponse": [
        ("generation", "i64", 0, None),
        ("error", "error", 0, None),
    ],
    "CreateGroupRequest": [
        ("group", "str", 0, None),
        ("session_timeout_ms", "i64", 0, None),
        ("topics", ("array", "str"), 0, None),
        ("ephemeral", "bool", 0, None),
        ("mode", "enum8:1", 1, None),
    ],
    "CreateGroupResponse": [
        ("group", "str", 0, None),
        ("error", "error", 0, None),
        ("controller", "Broker", 0, None),
    ],
    "DeleteGroupRequest": [
        ("group", "str", 0, None),
    ],
    "DeleteGroupResponse": [
        ("group", "str", 0, None),
        ("error", "error", 0, None),
    ],
    "RegisterConsumerRequest": [
        ("group", "str", 0, None),
        ("consumer_id", "str", 0, None),
        ("owned", ("array", "TopicPartition"), 0, None),
        ("metadata", "bytes", 1, None),
        ("rack", "str", 1, None),
        ("known_generation", "i64", 2, None),
    ],
    "RegisterConsumerResponse": [
        ("group", "str", 0, None),
        ("consumer_id", "str", 0, None),
        ("generation", "i64", 0, None),
        ("members", ("array", "str"), 0, None),
        ("partitions", ("array", "PartitionOffset"), 0, None),
        ("error", "error", 0, None),
        ("mode", "enum8:1", 1, None),
        ("member_data", ("array", "MemberMetadata"), 1, None),
        ("member_count", "i32", 2, None),
        ("list_base", "i64", 2, None),
        ("removed_members", ("array", "str"), 2, None),
    ],
    "ListGroupsRequest": [
        ("groups", ("array", "str"), 0, None),
    ],
    "ListGroupsResponse": [
        ("groups", ("array", "GroupInfo"), 0, None),
        ("error", "error", 0, None),
    ],
    "LeaveGroupRequest": [
        ("group", "str", 0, None),
        ("consumer_id", "str", 0, None),
    ],
    "LeaveGroupResponse": [
        ("error", "error", 0, None),
    ],
    "CommitOffsetsRequest": [
        ("group", "str", 0, None),
        ("consumer_id", "str", 0, None),
        ("generation", "i64", 0, None),
        ("offsets", ("array", "PartitionOffset"), 0, None),
    ],
    "CommitOffsetsResponse": [
        ("results", ("array", "PartitionError"), 0, None),
        ("error", "error", 0, None),
    ],
    "FetchOffsetsRequest": [
        ("group", "str", 0, None),
        ("topics", ("array", "str"), 0, None),
    ],
    "FetchOffsetsResponse": [
        ("offsets", ("array", "PartitionOffset"), 0, None),
        ("error", "error", 0, None),
    ],
    "RewindConsumerRequest": [
        ("group", "str", 0, None),
        ("offsets", ("array", "PartitionOffset"), 0, None),
    ],
    "RewindConsumerResponse": [
        ("results", ("array", "PartitionError"), 0, None),
        ("error", "error", 0, None),
    ],
    "AuthenticateRequest": [
        ("user", "str", 0, 0),
        ("secret", "str", 0, 0),
        ("mechanism", "str", 1, None),
        ("message", "bytes", 1, None),
    ],
    "AuthenticateResponse": [
        ("error", "error", 0, None),
        ("message", "bytes", 1, None),
    ],
    "DrainServerRequest": [
        ("server_id", "i32", 0, None),
        ("drain", "bool", 0, None),
    ],
    "DrainServerResponse": [
        ("error", "error", 0, None),
    ],
    "DescribeGroupRequest": [
        ("group", "str", 0, None),
    ],
    "DescribeGroupResponse": [
        ("group", "str", 0, None),
        ("error", "error", 0, None),
        ("controller", "Broker", 0, None),
        ("state", "i8", 0, None),
        ("session_timeout_ms", "i64", 0, None),
        ("ephemeral", "bool", 0, None),
        ("generation", "i64", 0, None),
        ("topics", ("array", "TopicState"), 0, None),
        ("members", ("array", "MemberState"), 0, None),
        ("offsets", ("array", "PartitionOffset"), 0, None),
        ("history", ("array", "RebalanceEvent"), 0, None),
        ("mode", "enum8:1", 1, None),
        ("kafka", "bool", 2, None),
        ("protocol_type", "str", 2, None),
        ("protocol_name", "str", 2, None),
    ],
    "DescribeServersRequest": [],
    "DescribeServersResponse": [
        ("error", "error", 0, None),
        ("server", "i32", 0, None),
        ("epsilon_permille", "i32", 0, None),
        ("margin_permille", "i32", 0, None),
        ("weighting", "str", 0, None),
        ("group_weight", "i64", 0, None),
        ("total", "i64", 0, None),
        ("bound", "i64", 0, None),
        ("complete", "bool", 0, None),
        ("servers", ("array", "ServerPlacement"), 0, None),
        ("moves", ("array", "GroupMove"), 0, None),
    ],
    "ErrorOnlyResponse": [
        ("error", "error", 0, None),
    ],
}
