"""One table per JetStream config type, in the Go struct's field order: each
field's JSON key, its Go type as the request decoder reads it (``gojson``),
the value the server echoes when it is unset, and whether Go's encoder omits
it when empty (``omitempty``).

Everything that needs a type's fields reads them from here: the request
structs below (decoding STREAM.CREATE / UPDATE / RESTORE and CONSUMER.CREATE
bodies), ``shapes`` (response field order and omitempty), and
``stream.config`` / ``consumer.config`` (which keys a config keeps), so a new
field is added in one place."""

from __future__ import annotations

from .gojson import (ACK_POLICY, BOOL, COMPRESSION, CONSUMER_ACTION, DELIVER_POLICY, DISCARD, DURATION, DURATIONS,
                     INT, INT32, INT64, PERSIST_MODE, PRIORITY_POLICY, PTIME, REPLAY_POLICY, RETENTION, STORAGE,
                     STRING, STRING_MAP, STRINGS, UINT64, Ptr, Slice, Struct)

# (json key, Go type, echoed default, omitempty)
SUBJECT_TRANSFORM_CONFIG = (
    ("src", STRING, "", False),
    ("dest", STRING, "", False),
)
EXTERNAL_STREAM = (
    ("api", STRING, "", False),
    ("deliver", STRING, "", False),
)
STREAM_CONSUMER_SOURCE = (
    ("name", STRING, "", True),
    ("deliver_subject", STRING, "", True),
)
PLACEMENT_FIELDS = (
    ("cluster", STRING, "", True),
    ("tags", STRINGS, None, True),
    ("preferred", STRING, "", True),
)
REPUBLISH_FIELDS = (
    ("src", STRING, "", True),
    ("dest", STRING, "", False),
    ("headers_only", BOOL, False, True),
)
STREAM_CONSUMER_LIMITS = (
    ("inactive_threshold", DURATION, 0, True),
    ("max_ack_pending", INT, 0, True),
)


def struct(name: str, table) -> Struct:
    """The request decoder's struct for a table."""
    return Struct(name, {key: t for key, t, _, _ in table})


SUBJECT_TRANSFORM = struct("SubjectTransformConfig", SUBJECT_TRANSFORM_CONFIG)
_TRANSFORMS = Slice(SUBJECT_TRANSFORM, "[]server.SubjectTransformConfig")
STREAM_SOURCE_FIELDS = (
    ("name", STRING, "", False),
    ("opt_start_seq", UINT64, 0, True),
    ("opt_start_time", PTIME, None, True),
    ("filter_subject", STRING, "", True),
    ("subject_transforms", _TRANSFORMS, None, True),
    ("external", Ptr(struct("ExternalStream", EXTERNAL_STREAM)), None, True),
    ("consumer", Ptr(struct("StreamConsumerSource", STREAM_CONSUMER_SOURCE)), None, True),
)
STREAM_SOURCE = struct("StreamSource", STREAM_SOURCE_FIELDS)

STREAM_CONFIG = (
    ("name", STRING, "", False),
    ("description", STRING, "", True),
    ("subjects", STRINGS, None, True),
    ("retention", RETENTION, "limits", False),
    ("max_consumers", INT, -1, False),
    ("max_msgs", INT64, -1, False),
    ("max_bytes", INT64, -1, False),
    ("max_age", DURATION, 0, False),
    ("max_msgs_per_subject", INT64, -1, False),
    ("max_msg_size", INT32, -1, True),
    ("discard", DISCARD, "old", False),
    ("storage", STORAGE, "file", False),
    ("num_replicas", INT, 1, False),
    ("no_ack", BOOL, False, True),
    ("duplicate_window", DURATION, 0, True),
    ("placement", Ptr(struct("Placement", PLACEMENT_FIELDS)), None, True),
    ("mirror", Ptr(STREAM_SOURCE), None, True),
    ("sources", Slice(Ptr(STREAM_SOURCE), "[]*server.StreamSource"), None, True),
    ("compression", COMPRESSION, "none", False),
    ("first_seq", UINT64, 0, True),
    ("subject_transform", Ptr(SUBJECT_TRANSFORM), None, True),
    ("republish", Ptr(struct("RePublish", REPUBLISH_FIELDS)), None, True),
    ("allow_direct", BOOL, False, False),
    ("mirror_direct", BOOL, False, False),
    ("discard_new_per_subject", BOOL, False, True),
    ("sealed", BOOL, False, False),
    ("deny_delete", BOOL, False, False),
    ("deny_purge", BOOL, False, False),
    ("allow_rollup_hdrs", BOOL, False, False),
    ("consumer_limits", struct("StreamConsumerLimits", STREAM_CONSUMER_LIMITS), None, False),
    ("allow_msg_ttl", BOOL, False, False),
    ("subject_delete_marker_ttl", DURATION, 0, True),
    ("allow_msg_counter", BOOL, False, True),
    ("allow_atomic", BOOL, False, True),
    ("allow_msg_schedules", BOOL, False, True),
    ("persist_mode", PERSIST_MODE, "", True),
    ("allow_batched", BOOL, False, True),
    ("metadata", STRING_MAP, None, True),
)

CONSUMER_CONFIG = (
    ("durable_name", STRING, "", True),
    ("name", STRING, "", True),
    ("description", STRING, "", True),
    ("deliver_policy", DELIVER_POLICY, "all", False),
    ("opt_start_seq", UINT64, 0, True),
    ("opt_start_time", PTIME, None, True),
    ("ack_policy", ACK_POLICY, "none", False),
    ("ack_wait", DURATION, 0, True),
    ("max_deliver", INT, 0, True),
    ("backoff", DURATIONS, None, True),
    ("filter_subject", STRING, "", True),
    ("filter_subjects", STRINGS, None, True),
    ("replay_policy", REPLAY_POLICY, "instant", False),
    ("rate_limit_bps", UINT64, 0, True),
    ("sample_freq", STRING, "", True),
    ("max_waiting", INT, 0, True),
    ("max_ack_pending", INT, 0, True),
    ("flow_control", BOOL, False, True),
    ("headers_only", BOOL, False, True),
    ("max_batch", INT, 0, True),
    ("max_expires", DURATION, 0, True),
    ("max_bytes", INT, 0, True),
    ("deliver_subject", STRING, "", True),
    ("deliver_group", STRING, "", True),
    ("idle_heartbeat", DURATION, 0, True),
    ("inactive_threshold", DURATION, 0, True),
    ("num_replicas", INT, 0, False),
    ("mem_storage", BOOL, False, True),
    ("direct", BOOL, False, True),
    ("sourcing", BOOL, False, True),
    ("metadata", STRING_MAP, None, True),
    ("pause_until", PTIME, None, True),
    ("priority_groups", STRINGS, None, True),
    ("priority_policy", PRIORITY_POLICY, "", True),
    ("priority_timeout", DURATION, 0, True),
)

# -- the request structs built from the tables ----------------------------------------
STREAM_CONFIG_STRUCT_FIELDS = {key: t for key, t, _, _ in STREAM_CONFIG}
# STREAM.CREATE / STREAM.UPDATE: StreamConfig embedded, plus pedantic
STREAM_CONFIG_REQUEST = Struct("StreamConfigRequest", dict(STREAM_CONFIG_STRUCT_FIELDS, pedantic=BOOL))
CONSUMER_CONFIG_STRUCT = struct("ConsumerConfig", CONSUMER_CONFIG)
CREATE_CONSUMER_REQUEST = Struct("CreateConsumerRequest", {
    "stream_name": STRING, "config": CONSUMER_CONFIG_STRUCT, "action": CONSUMER_ACTION, "pedantic": BOOL,
})

# nested tables the response shapes order by (shapes.ordered)
NESTED = {
    "mirror": STREAM_SOURCE_FIELDS,
    "sources": STREAM_SOURCE_FIELDS,
    "subject_transform": SUBJECT_TRANSFORM_CONFIG,
    "subject_transforms": SUBJECT_TRANSFORM_CONFIG,
    "republish": REPUBLISH_FIELDS,
    "placement": PLACEMENT_FIELDS,
    "external": EXTERNAL_STREAM,
    "consumer": STREAM_CONSUMER_SOURCE,
}
