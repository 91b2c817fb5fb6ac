"""The JetStream API errors, with the real server's code, err_code and
description (server/errors.json). Raise ``ApiError``; the dispatcher turns it
into ``{"error": {"code", "err_code", "description"}}`` — exactly those three
keys, nats-py builds its exception with ``**error``."""

from __future__ import annotations


class ApiError(Exception):
    __slots__ = ("code", "err_code", "description", "counted")

    def __init__(self, code: int, err_code: int, description: str):
        super().__init__(description)
        self.code = code
        self.err_code = err_code
        self.description = description
        # in $JS.API.INFO's api.errors: nats-server answers a few errors
        # (a store's, in MSG.DELETE) as plain responses it does not count
        self.counted = True

    def uncounted(self) -> "ApiError":
        self.counted = False
        return self

    def to_dict(self) -> dict:
        return {"code": self.code, "err_code": self.err_code, "description": self.description}


def _fixed(code: int, err_code: int, description: str):
    return lambda: ApiError(code, err_code, description)


def _detail(code: int, err_code: int, template: str = "{}"):
    return lambda detail: ApiError(code, err_code, template.format(detail))


bad_request = _fixed(400, 10003, "bad request")
consumer_create = _detail(500, 10012)
consumer_store_failed = _fixed(500, 10012, "error creating store for consumer")  # as 2.15 answers it
consumer_name_in_use = _fixed(400, 10013, "consumer name already in use")
consumer_not_found = _fixed(404, 10014, "consumer not found")
consumer_durable_not_in_subject = _fixed(400, 10016, "consumer expected to be durable but no durable name set in subject")
consumer_durable_mismatch = _fixed(400, 10017, "consumer name in subject does not match durable name in request")
consumer_durable_not_set = _fixed(400, 10018, "consumer expected to be durable but a durable name was not set")
consumer_ephemeral_with_durable_in_subject = _fixed(400, 10019, "consumer expected to be ephemeral but detected a durable name set in subject")
consumer_ephemeral_with_durable = _fixed(400, 10020, "consumer expected to be ephemeral but a durable name was set in request")
invalid_json = _detail(400, 10025, "invalid JSON: {}")
max_consumers = _fixed(400, 10026, "maximum consumers limit reached")
no_message_found = _fixed(404, 10037, "no message found")
not_empty_request = _fixed(400, 10038, "expected an empty request payload")
sequence_not_found = _detail(400, 10043, "sequence {} not found")
stream_create = _detail(500, 10049)
stream_store_create_failed = _fixed(500, 10049, "error creating store for stream")
stream_invalid_config = _detail(500, 10052)
stream_msg_too_big = _fixed(400, 10054, "message size exceeds maximum allowed")
stream_name_mismatch = _fixed(400, 10056, "stream name in subject does not match request")
stream_msg_delete_failed = _detail(500, 10057)
stream_name_exists = _fixed(400, 10058, "stream name already in use with a different configuration")
stream_not_found = _fixed(404, 10059, "stream not found")
expected_stream_mismatch = _fixed(400, 10060, "expected stream does not match")
stream_subject_overlap = _fixed(400, 10065, "subjects overlap with an existing stream")
stream_update = _detail(500, 10069)
wrong_last_msg_id = _detail(400, 10070, "wrong last msg ID: {}")
wrong_last_sequence = _detail(400, 10071, "wrong last sequence: {}")
replicas_not_supported = _fixed(500, 10074, "replicas > 1 not supported in non-clustered mode")
stream_store_failed = _detail(503, 10077)
consumer_config_required = _fixed(400, 10078, "consumer config required")
consumer_deliver_wildcards = _fixed(400, 10079, "consumer deliver subject has wildcards")
consumer_push_max_waiting = _fixed(400, 10080, "consumer in push mode can not set max waiting")
consumer_deliver_cycle = _fixed(400, 10081, "consumer deliver subject forms a cycle")
consumer_small_heartbeat = _fixed(400, 10083, "consumer idle heartbeat needs to be >= 100ms")
consumer_pull_requires_ack = _fixed(400, 10084, "consumer in pull mode requires explicit ack policy on workqueue stream")
consumer_max_waiting_negative = _fixed(400, 10087, "consumer max waiting needs to be positive")
consumer_hb_requires_push = _fixed(400, 10088, "consumer idle heartbeat requires a push based consumer")
consumer_fc_requires_push = _fixed(400, 10089, "consumer flow control requires a push based consumer")
consumer_invalid_policy = _detail(400, 10094)
header_too_big = _fixed(400, 10097, "header size exceeds maximum allowed of 64k")
wq_multiple_unfiltered = _fixed(400, 10099, "multiple non-filtered consumers not allowed on workqueue stream")
wq_not_unique = _fixed(400, 10100, "filtered consumer not unique on workqueue stream")
wq_not_deliver_all = _fixed(400, 10101, "consumer must be deliver all on workqueue stream")
consumer_name_too_long = _detail(400, 10102, "consumer name is too long, maximum allowed is {}")
consumer_bad_durable_name = _fixed(400, 10103, "durable name can not contain '.', '*', '>'")
consumer_description_too_long = _detail(400, 10107, "consumer description is too long, maximum allowed is {}")
consumer_fc_needs_heartbeat = _fixed(400, 10108, "consumer with flow control also needs heartbeats")
stream_sealed = _fixed(400, 10109, "invalid operation on sealed stream")
stream_purge_failed = _detail(500, 10110)
stream_rollup_failed = _detail(500, 10111)
consumer_max_request_batch_negative = _fixed(400, 10114, "consumer max request batch needs to be > 0")
consumer_max_request_expires_small = _fixed(400, 10115, "consumer max request expires needs to be >= 1ms")
consumer_max_deliver_backoff = _fixed(400, 10116, "max deliver is required to be > length of backoff values")
consumer_name_path_separators = _fixed(400, 10127, "Consumer name can not contain path separators")
stream_name_path_separators = _fixed(400, 10128, "Stream name can not contain path separators")
consumer_filter_mismatch = _fixed(400, 10131, "Consumer create request did not match filtered subject from create subject")
consumer_durable_name_mismatch = _fixed(400, 10132, "Consumer Durable and Name have to be equal if both are provided")
replicas_negative = _fixed(400, 10133, "replicas count cannot be negative")
consumer_duplicate_filters = _fixed(400, 10136, "consumer cannot have both FilterSubject and FilterSubjects specified")
consumer_multiple_filters_api = _fixed(400, 10137, "consumer with multiple subject filters cannot use subject based API")
consumer_overlapping_filters = _fixed(400, 10138, "consumer subject filters cannot overlap")
consumer_empty_filter = _fixed(400, 10139, "consumer filter in FilterSubjects cannot be empty")
consumer_already_exists = _fixed(400, 10148, "consumer already exists")
consumer_does_not_exist = _fixed(400, 10149, "consumer does not exist")
wrong_last_sequence_constant = _fixed(400, 10164, "wrong last sequence")
msg_ttl_invalid = _fixed(400, 10165, "invalid per-message TTL")
msg_ttl_disabled = _fixed(400, 10166, "per-message TTL is disabled")
atomic_publish_disabled = _fixed(400, 10174, "atomic publish is disabled")
consumer_priority_policy_without_group = _fixed(400, 10159, "Setting PriorityPolicy requires at least one PriorityGroup to be set")
consumer_invalid_sampling = _detail(400, 10095, "failed to parse consumer sampling configuration: {}")
consumer_invalid_priority_group = _fixed(400, 10160, "Provided priority group does not exist for this consumer")
consumer_empty_group_name = _fixed(400, 10161, "Group name cannot be an empty string")
consumer_invalid_group_name = _fixed(400, 10162, "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters")
consumer_push_with_priority_group = _fixed(400, 10178, "priority groups can not be used with push consumers")
consumer_priority_group_with_policy_none = _fixed(400, 10196, "consumer can not have priority groups when policy is none")
consumer_pinned_ttl_without_policy = _fixed(400, 10197, "PinnedTTL cannot be set when PriorityPolicy is none")
consumer_ack_wait_negative = _fixed(400, 10183, "consumer ack wait needs to be positive")
consumer_backoff_negative = _fixed(400, 10184, "consumer backoff needs to be positive")
required_api_level = _fixed(412, 10185, "JetStream minimum api level required")
expected_last_seq_per_subject_invalid = _fixed(400, 10193, "missing sequence for expected last sequence per subject")
consumer_invalid_reset = _detail(400, 10204, "invalid reset: {}")

# -- stream topology: subject transforms, republish, mirrors, sources, snapshots --
mirror_max_msg_size_too_big = _fixed(400, 10030, "stream mirror must have max message size >= source")
mirror_with_sources = _fixed(400, 10031, "stream mirrors can not also contain other sources")
mirror_with_subjects = _fixed(400, 10034, "stream mirrors can not contain subjects")
source_max_msg_size_too_big = _fixed(400, 10046, "stream source must have max message size >= target")
mirror_not_updatable = _fixed(400, 10055, "stream mirror configuration can not be updated")
stream_restore = _detail(500, 10062, "restore failed: {}")
stream_snapshot = _detail(500, 10064, "snapshot failed: {}")
snapshot_deliver_subject_invalid = _fixed(400, 10015, "deliver subject not valid")
stream_name_exist_restore_failed = _fixed(400, 10130, "stream name already in use, cannot restore")
source_duplicate = _fixed(400, 10140, "duplicate source configuration detected")
source_invalid_stream_name = _fixed(400, 10141, "sourced stream name is invalid")
mirror_invalid_stream_name = _fixed(400, 10142, "mirrored stream name is invalid")
mirror_with_first_seq = _fixed(400, 10143, "stream mirrors can not have first sequence configured")
source_multiple_filters = _fixed(400, 10144, "source with multiple subject transforms cannot also have a single subject filter")
source_invalid_subject_filter = _detail(400, 10145, "source transform source: {}")
source_invalid_transform_destination = _detail(400, 10146, "source transform: {}")
source_overlapping_filters = _fixed(400, 10147, "source filters can not overlap")
mirror_multiple_filters = _fixed(400, 10150, "mirror with multiple subject transforms cannot also have a single subject filter")
mirror_invalid_subject_filter = _detail(400, 10151, "mirror transform source: {}")
mirror_overlapping_filters = _fixed(400, 10152, "mirror subject filters can not overlap")
mirror_invalid_transform_destination = _detail(400, 10154, "mirror transform: {}")
stream_transform_invalid_source = _detail(400, 10155, "stream transform source: {}")
stream_transform_invalid_destination = _detail(400, 10156, "stream transform: {}")
message_source_header_not_allowed = _fixed(400, 10227, "message stream source header is not allowed")
# counters (ADR-49)
msg_incr_disabled = _fixed(400, 10168, "message counters is disabled")
msg_incr_missing = _fixed(400, 10169, "message counter increment is missing")
msg_incr_payload = _fixed(400, 10170, "message counter has payload")
msg_incr_invalid = _fixed(400, 10171, "message counter increment is invalid")
msg_counter_broken = _fixed(400, 10172, "message counter is broken")
# atomic batch publish (ADR-50)
atomic_publish_missing_seq = _fixed(400, 10175, "atomic publish sequence is missing")
atomic_publish_incomplete = _fixed(400, 10176, "atomic publish batch is incomplete")
atomic_publish_unsupported_header = _detail(400, 10177, "atomic publish unsupported header used: {}")
atomic_publish_invalid_id = _fixed(400, 10179, "atomic publish batch ID is invalid")
atomic_publish_too_large = _detail(400, 10199, "atomic publish batch is too large: {}")
atomic_publish_invalid_commit = _fixed(400, 10200, "atomic publish batch commit is invalid")
atomic_publish_duplicate_msg = _fixed(400, 10201, "atomic publish batch contains duplicate message id")
atomic_publish_too_many_inflight = _fixed(429, 10210, "atomic publish too many inflight")
# message schedules (ADR-51)
msg_schedules_disabled = _fixed(400, 10188, "message schedules is disabled")
msg_schedules_pattern_invalid = _fixed(400, 10189, "message schedules pattern is invalid")
msg_schedules_target_invalid = _fixed(400, 10190, "message schedules target is invalid")
msg_schedules_ttl_invalid = _fixed(400, 10191, "message schedules invalid per-message TTL")
msg_schedules_rollup_invalid = _fixed(400, 10192, "message schedules invalid rollup")
msg_schedules_source_invalid = _fixed(400, 10203, "message schedules source is invalid")
msg_schedules_scheduler_invalid = _fixed(400, 10212, "message schedules invalid scheduler")
msg_schedules_tz_invalid = _fixed(400, 10223, "message schedules time zone is invalid")
# fast batch publish (ADR-50 fast ingest)
batch_publish_disabled = _fixed(400, 10205, "batch publish is disabled")
batch_publish_invalid_pattern = _fixed(400, 10206, "batch publish pattern is invalid")
batch_publish_invalid_id = _fixed(400, 10207, "batch publish ID is invalid")
batch_publish_unknown_id = _fixed(400, 10208, "batch publish ID unknown")
batch_publish_too_many_inflight = _fixed(429, 10211, "batch publish too many inflight")
# mirrors and sources with the 2.12+ publish features
mirror_with_counters = _fixed(400, 10173, "stream mirrors can not also calculate counters")
mirror_with_atomic = _fixed(400, 10198, "stream mirrors can not also use atomic publishing")
mirror_with_batched = _fixed(400, 10209, "stream mirrors can not also use batch publishing")
mirror_with_schedules = _fixed(400, 10186, "stream mirrors can not also schedule messages")
source_with_schedules = _fixed(400, 10187, "stream source can not also schedule messages")
