"""A consumer: its config, ConsumerInfo, pause, persistence of durables,
ephemeral clean-up, advisories and creation through the API. Its state is
three objects, each in its own module: the ack state (``acks.AckState``:
delivered, ack floors, pending acks, redelivery), the pull queue
(``pullqueue.PullQueue``: waiting requests, priority groups, the pin) and
delivery (``delivery.Delivery``: the delivery loop, push flow control,
heartbeats, the last-per-subject skip list)."""

from __future__ import annotations

import logging
import random
import string
from pathlib import Path
from typing import TYPE_CHECKING

from .. import advisories, errors, limits
from . import config as consumerconfig
from .acks import AckState, _nuid
from .pullqueue import PullQueue
from ..names import MAX_NAME_LEN, byte_len, has_path_separators
from .delivery import Delivery
from .state import ACK_LOG
from .state import NAMES as STATE_FILES
from .state import StateSlots
from ..persist import CorruptStateError, fsync_dir, make_dirs, read_json_checked, write_json_atomic
from ..shapes import (CONSUMER_CONFIG_FIELDS, NS, ZERO_TIME, dumps, now_ns, ordered, parse_rfc3339, rfc3339, sequence_info,
                      with_dynamic_metadata)
from ...subjects import subject_matches, subjects_overlap

if TYPE_CHECKING:
    from ..stream.stream import Stream

log = logging.getLogger("natslab.jetstream")

META_FILE = "meta.json"  # config and creation time: written (fsynced) before CREATE is answered
LEGACY_STATE_FILE = "state.json"  # earlier builds: config and delivery state in one file
# the delivery state is in state.0 / state.1 (consumer/state.py): its loss resets only that, as on nats-server
_SAVE_DELAY = 0.05  # coalesce state writes: a plain ack is written (to the OS) within 50 ms; see reply_when_saved


def _gen_name() -> str:
    return "".join(random.choices(string.ascii_letters + string.digits, k=8))


class Consumer:
    """Owns ``acks``, ``pulls`` and ``delivery`` (see the module docstring).
    They reach each other only through the consumer (``c.acks`` ...) and
    change one another's state only through methods."""

    def __init__(self, stream: "Stream", name: str, config: dict, created: int):
        self.stream = stream
        self.messaging = stream.js.messaging
        self.name = name
        self.config = config
        self.created = created
        self.durable = bool(config.get("durable_name"))
        self.closed = False
        self.journal = self.messaging.journal  # jetstream/journal.py: None when no history is kept
        self._set_filters()
        # what was delivered and acked, the floors and the ack timer (consumer/acks.py)
        self.acks = AckState(self)
        self._save_handle = None
        self._sync_next_save = False  # the sync timer came while a save was due
        self._config_saved = False
        self._held_replies: list[bytes] = []  # ack replies waiting for the state they confirm
        self._held_acks: list[tuple[int, int]] = []  # and their (stream seq, consumer seq)
        self._saved_at = (0, 0, 0)  # (sseq, dseq, generation) when the state was last written
        self._slots: StateSlots | None = None  # the state files, opened at the first write
        self._pause_src = None
        self._pause_ns = 0
        self._inactive_timer = None
        self._pause_timer = None
        self._subs: list = []
        self.pulls = PullQueue(self)
        self.delivery = Delivery(self)

    # -- config helpers -------------------------------------------------------------
    def _set_filters(self) -> None:
        self.filters = consumerconfig.filters_of(self.config)
        if self.filters in ([">"],):
            self.filters = []

    def filter_matches(self, subject: str) -> bool:
        return not self.filters or any(subject_matches(f, subject) for f in self.filters)

    @property
    def is_pull(self) -> bool:
        return not self.config.get("deliver_subject")

    # -- lifecycle ----------------------------------------------------------------------
    def select_start(self) -> None:
        """selectStartingSeqNo: where a new consumer starts."""
        cfg, store = self.config, self.stream.store
        st = store.state()
        dp = cfg["deliver_policy"]
        opt = cfg.get("opt_start_seq") or 0
        if opt:
            sseq = opt
        elif dp == "all":
            sseq = st.first_seq
        elif dp == "last":
            if not self.filters:
                sseq = st.last_seq
            else:
                sseq = 0
                for f in self.filters:
                    sm = store.load_last(f)
                    if sm and sm.seq > sseq:
                        sseq = sm.seq
        elif dp == "last_per_subject":
            if self.stream.config["max_msgs_per_subject"] == 1:
                sseq = st.first_seq
            else:
                seqs = set()
                for f in self.filters or [">"]:
                    for subj in store.subjects_state(f):
                        seqs.add(store.last_seq_for_subject(subj))
                lss = sorted(seqs)
                sseq = lss[0] if lss else st.last_seq
                if lss:
                    self.delivery.skip_list(lss, st.last_seq)
        elif dp == "by_start_time":
            t = parse_rfc3339(cfg["opt_start_time"])
            sseq = st.last_seq + 1
            s = 0
            while True:
                sm = store.load_next(s)
                if sm is None:
                    break
                if sm.ts >= t:
                    sseq = sm.seq
                    break
                s = sm.seq + 1
        else:  # new
            sseq = st.last_seq + 1
        if st.first_seq == 0 and not opt:
            sseq = 1
        elif sseq > st.last_seq and not opt:
            sseq = st.last_seq + 1
        elif sseq < st.first_seq:
            sseq = st.first_seq
        self.acks.start_at(max(sseq, 1))

    def start(self) -> None:
        messaging = self.messaging
        messaging.internal_clients(2)  # (nats-server's consumer client and its system client)
        if self.config["ack_policy"] not in ("none", "flow_control"):
            # as the real server: an ack-none consumer has no ack subject
            # (an ack sent anyway gets no responders), nor has one acked by
            # its flow control replies
            ack_prefix = f"$JS.ACK.{self.stream.name}.{self.name}"
            self._subs.append(messaging.subscribe(ack_prefix + ".>", self.acks.on_ack, raw=True,
                                                     run=self.acks.ack_runs((ack_prefix + ".").encode())))
        if not self.is_pull:
            self._subs.append(messaging.subscribe(f"$JS.FC.{self.stream.name}.{self.name}.*", self.delivery.on_flow_control))
        self.delivery.start()
        self._arm_pause_timer()
        self.check_inactive()

    def stop(self) -> None:
        if self.closed:
            return
        self.closed = True
        for s in self._subs:
            self.messaging.unsubscribe(s)
        self._subs.clear()
        self.delivery.stop()
        self.pulls.stop()
        self.acks.stop()
        for t in (self._inactive_timer, self._pause_timer):
            if t:
                t.cancel()
        if self._slots is not None:
            self._slots.close()

    def delete(self, notify_stream: bool = True) -> None:
        self.pulls.notify_deleted()
        self.stop()
        if self._save_handle:
            self._save_handle.cancel()
            self._save_handle = None
        self.stream.consumers.pop(self.name, None)
        d = self.state_dir()
        if d is not None and d.exists():
            import shutil

            shutil.rmtree(d, ignore_errors=True)
            fsync_dir(d.parent)  # (a deleted consumer must not come back after a power cut)
        # on its own (the API, inactivity) or with its stream, as nats-server announces both
        advisories.consumer_action(self.stream.js, self.stream.name, self.name, "delete")
        if self.journal is not None:
            self.journal.consumer(self, "delete")
        if notify_stream:
            self.stream.check_interest_all()

    def update_config(self, cfg: dict) -> None:
        old = self.config
        self.config = cfg
        old_filters = self.filters
        self._set_filters()
        if self.filters != old_filters:
            # messages only the old filters wanted lose their interest now
            self.stream.check_interest_all()
        if old.get("deliver_subject") != cfg.get("deliver_subject"):
            self.delivery.update_push_subject()
        if old.get("ack_wait") != cfg.get("ack_wait") or old.get("backoff") != cfg.get("backoff"):
            self.acks.rearm_pending()  # the ack timer looks at every pending deadline again
        self._arm_pause_timer()
        self.save_config()
        if self.journal is not None:
            self.journal.consumer(self, "update")
        self.signal()

    def reset(self, seq: int) -> int:
        """CONSUMER.RESET (resetStartingSeq): start over from ``seq`` (0: the
        ack floor + 1), forgetting pending acks and redelivery counts."""
        dp = self.config["deliver_policy"]
        if seq == 0:
            seq = self.acks.asflr + 1
        elif dp == "by_start_sequence" and seq < self.config.get("opt_start_seq", 0):
            raise errors.consumer_invalid_reset("below start seq")
        elif dp == "by_start_time":
            t = parse_rfc3339(self.config["opt_start_time"])
            sm = self.stream.store.load_next(0)
            while sm is not None and sm.ts < t:
                sm = self.stream.store.load_next(sm.seq + 1)
            nseq = sm.seq if sm else self.stream.store.state().last_seq + 1
            if seq < nseq:
                raise errors.consumer_invalid_reset("below start time")
        elif dp not in ("all", "by_start_sequence"):
            raise errors.consumer_invalid_reset("not allowed")
        seq = max(seq, 1)
        self.delivery.skip_list(None, 0)
        self.acks.start_at(seq)
        self.stream.check_interest_all()
        # on disk (by default synced) before the reset is answered
        if self._save_handle is not None:
            self._save_handle.cancel()
            self._save_handle = None
        self.write_state(sync=self._syncs())
        if self.journal is not None:
            self.journal.consumer(self, "reset", (seq,))
        self.signal()
        return seq

    # -- ephemeral / inactive clean-up ----------------------------------------------------
    def check_inactive(self, activity: bool = False) -> None:
        """Arm the inactivity timer when the consumer has no interest, cancel
        it when it has. An armed timer keeps counting from when the interest
        went unless ``activity`` (a pull request) restarts it: every delivery
        pass asks again, and re-arming on each (a stressed run's) kept an idle
        ephemeral consumer alive for good."""
        thr = self.config.get("inactive_threshold") or 0
        if self.closed or not thr:
            return
        idle = (not self.delivery.push_active) if not self.is_pull else not self.pulls.waiting
        if self._inactive_timer:
            if idle and not activity:
                return
            self._inactive_timer.cancel()
            self._inactive_timer = None
        if idle:
            self._inactive_timer = self.messaging.loop.call_later(thr / NS, self._inactive_fired)

    def _inactive_fired(self) -> None:
        self._inactive_timer = None
        if self.closed:
            return
        idle = (not self.delivery.push_active) if not self.is_pull else not self.pulls.waiting
        if idle:
            self.messaging.logger.debug("deleting inactive consumer %s > %s", self.stream.name, self.name)
            self.delete()

    # -- pause ---------------------------------------------------------------------------
    def pause_until_ns(self) -> int:
        pu = self.config.get("pause_until")
        if pu != self._pause_src:  # parsed once per change, asked on every delivery
            self._pause_src = pu
            try:
                self._pause_ns = parse_rfc3339(pu) if pu else 0
            except ValueError:
                self._pause_ns = 0
        return self._pause_ns

    def is_paused(self) -> bool:
        until = self.pause_until_ns()
        return bool(until) and until > now_ns()

    def pause(self, until: int, shown: str | None = None) -> None:
        """Pause until ``until`` (ns); ``shown``: the time as the config keeps
        it, also for a time already past (None removes it: a resume)."""
        cfg = dict(self.config)
        md = dict(cfg.get("metadata") or {})
        if shown is None and until:
            shown = rfc3339(until)
        if shown:
            cfg["pause_until"] = shown
        else:
            cfg.pop("pause_until", None)
        md["_nats.req.level"] = consumerconfig.required_api_level(cfg, paused=bool(shown))
        cfg["metadata"] = md
        self.config = cfg
        self._arm_pause_timer()
        self.save_config()
        if self.journal is not None:
            self.journal.consumer(self, "pause", extra=shown or "")
        self.signal()

    def _arm_pause_timer(self) -> None:
        if self._pause_timer:
            self._pause_timer.cancel()
            self._pause_timer = None
        until = self.pause_until_ns()
        if until > now_ns():
            self._pause_timer = self.messaging.loop.call_later((until - now_ns()) / NS, self.signal)

    # -- info ----------------------------------------------------------------------------
    def num_pending(self) -> int:
        return self.delivery.num_pending()

    def count_from(self, start: int, lps: bool) -> int:
        """Messages the filters match from ``start`` on (``lps``: the last per subject only)."""
        store = self.stream.store
        if not self.filters:
            return store.num_pending(start, None, lps)
        return sum(store.num_pending(start, f, lps) for f in self.filters)

    def info_json(self, dynamic: bool = True) -> dict:
        cfg = with_dynamic_metadata(self.config, self.messaging.version) if dynamic else self.config
        d = {
            "stream_name": self.stream.name,
            "name": self.name,
            "created": rfc3339(self.created),
            "config": ordered(cfg, CONSUMER_CONFIG_FIELDS),
            "delivered": sequence_info(self.acks.dseq - 1, self.acks.sseq - 1, self.acks.ldt),
            "ack_floor": sequence_info(self.acks.sfloor[0], self.acks.sfloor[1], self.acks.lat),
            "num_ack_pending": len(self.acks.pending),
            "num_redelivered": 0 if self.config["max_deliver"] == 1 else len(self.acks.rdc),
            "num_waiting": self.pulls.num_waiting(),
            "num_pending": self.num_pending(),
        }
        if not self.is_pull and self.delivery.push_active:
            d["push_bound"] = True
        until = self.pause_until_ns()
        if until > now_ns():
            d["paused"] = True
            d["pause_remaining"] = until - now_ns()
        d["ts"] = rfc3339(now_ns())
        groups = self.config.get("priority_groups")
        if groups:
            # as the real server: the state of the first group only
            g = {"group": groups[0]}
            pulls = self.pulls
            if pulls.pin_id:
                g["pinned_client_id"] = pulls.pin_id
            g["pinned_ts"] = rfc3339(pulls.pin_ts) if pulls.pin_ts else ZERO_TIME
            d["priority_groups"] = [g]
        return d

    # -- what the others call -----------------------------------------------------------------
    def signal(self) -> None:
        """Something may be deliverable: delivery runs soon."""
        self.delivery.signal()

    def on_stored(self, seq: int, subject: str) -> None:
        if self.filter_matches(subject):
            self.delivery.signal()

    def on_pull_request(self, reply: str, payload: bytes) -> None:
        self.pulls.on_request(reply, payload)

    def unpin(self, group: str, reason: str) -> None:
        self.pulls.unpin(group, reason)

    # -- stream changes ---------------------------------------------------------------------
    def on_purged(self, fseq: int, first: int, lseq: int, flt: str | None) -> None:
        self.acks.on_purged(fseq, first, lseq, flt)

    def on_msg_removed(self, seq: int) -> None:
        self.acks.on_msg_removed(seq)

    # -- advisories -------------------------------------------------------------------------
    def advisory(self, prefix: str, type_name: str, body: dict, account: bool = False) -> None:
        """An advisory about this consumer on ``prefix.<stream>.<consumer>``
        (``account``: the event names the account, as the priority-group ones do)."""
        subject = f"{prefix}.{self.stream.name}.{self.name}"
        if not self.messaging.has_interest(subject):
            return
        d = {"type": type_name, "id": _nuid(), "timestamp": rfc3339(now_ns())}
        if account:
            d["account"] = "$G"
        d["stream"], d["consumer"] = self.stream.name, self.name
        d.update(body)
        self.messaging.publish(subject, "", None, dumps(d).encode())

    # -- interest retention ---------------------------------------------------------------
    def needs(self, seq: int, subject: str) -> bool:
        """needAck: does this consumer still need ``seq`` (interest retention)?"""
        if not self.filter_matches(subject):
            return False
        return self.acks.needs(seq)

    # -- persistence ----------------------------------------------------------------------
    def state_dir(self) -> Path | None:
        # as on the real server: file-backed unless the stream or the consumer is in memory
        if self.stream.config["storage"] != "file" or self.config.get("mem_storage"):
            return None
        return self.stream.js.stream_dir(self.stream.name) / "obs" / self.name

    def create_store(self) -> None:
        """Make the consumer's directory before it exists for anyone: a name
        the file system refuses (a NUL, more than 255 bytes) is the real
        server's store-creation error, not a consumer that cannot be saved."""
        d = self.state_dir()
        if d is None:
            return
        try:
            make_dirs(d)  # (durable: a power cut must not drop it with the files fsynced in it)
        except (OSError, ValueError) as e:
            self.messaging.logger.error("could not create the store of consumer %s > %r: %s", self.stream.name, self.name, e)
            raise errors.consumer_store_failed() from None

    def schedule_save(self) -> None:
        if self._save_handle is None and not self.closed and self.state_dir() is not None:
            self._save_handle = self.messaging.loop.call_later(_SAVE_DELAY, self.save_state)

    def save_config(self) -> None:
        """Write the config, durably (fsynced), before the change is
        answered; OSError when it cannot (the caller answers the error)."""
        d = self.state_dir()
        if d is not None:
            write_json_atomic(d / META_FILE, {"config": self.config, "created": self.created})
            self._config_saved = True

    def reply_when_saved(self, reply: bytes, sseq: int, dseq: int, ack: bool = True) -> None:
        """Answer an ack that asked for an answer (``ack_sync``, or any ack
        kind sent with a reply subject; ``ack``: it is an ack or a term, not
        a nak or +WPI) once the state it changed is written, and by default
        (group commit, or sync_interval: always) synced: it survives a power
        cut. The answers to every such ack of one read wait for one write
        and one sync: like a file store's PubAcks, they are released by
        ``write_out``, which the server runs before it next writes to any
        client."""
        if self.state_dir() is None:
            self.messaging.reply(reply, b"")
            return
        if not self._held_replies:
            self.messaging.write_behind(self)
        self._held_replies.append(reply)
        self._held_acks.append((sseq, dseq) if ack else None)

    def _syncs(self) -> bool:
        """Does an answered ack wait for a sync (not with a lazy sync_interval)?"""
        js = self.stream.js
        return js.group_commit or js.sync_always

    def sync_owed(self) -> bool:
        """Do the answers held wait for a sync (the server leaves those to
        the end of a read it parses in slices: one sync for the read)?"""
        return bool(self._held_replies) and self._syncs()

    def write_out(self) -> None:
        """Write the acks held (only they, to the ack log, when nothing was
        delivered since the state was last written; else the whole state),
        sync them, then send their answers. The stream's removals they made
        (interest, workqueue) are committed first. When nothing can be
        written they are not sent: the acker's ack_sync times out, rather
        than confirming what a crash would undo."""
        replies, self._held_replies = self._held_replies, []
        acks, self._held_acks = self._held_acks, []
        if not replies or self.closed:
            return
        try:
            if self.stream.config["retention"] != "limits":
                self.stream.store.commit()
            if (self._slots is not None and None not in acks
                    and self._saved_at == (self.acks.sseq, self.acks.dseq, self._slots.generation)):
                self._slots.log_acks(acks)
            else:
                if self._save_handle is not None:
                    self._save_handle.cancel()
                    self._save_handle = None
                self.write_state()
            if self._syncs():
                self._slots.sync()
        except OSError as e:
            self.messaging.logger.error("could not save consumer %s > %s: %s", self.stream.name, self.name, e)
            return
        self.messaging.reply_run([(r, None, b"") for r in replies])

    def sync_state(self) -> None:
        """JetStream's sync timer: the delivery state (plain acks,
        deliveries, redelivery counts) is durable within sync_interval (and
        the 50 ms a save waits to coalesce: a save that is due syncs as it
        writes, rather than the state being written twice)."""
        if self.closed:
            return
        if self._save_handle is not None:
            self._sync_next_save = True
            return
        if self._slots is not None and self._slots.unsynced:
            try:
                self._slots.sync()
            except OSError as e:
                self.messaging.logger.error("could not sync consumer %s > %s: %s", self.stream.name, self.name, e)

    def save_state(self, sync: bool = False) -> bool:
        """Write the delivery state (``sync``: fsynced); False when it could
        not be written (logged)."""
        self._save_handle = None
        sync, self._sync_next_save = sync or self._sync_next_save, False
        try:
            self.write_state(sync)
        except OSError as e:
            self.messaging.logger.error("could not save consumer %s > %s: %s", self.stream.name, self.name, e)
            return False
        return True

    def write_state(self, sync: bool = False) -> None:
        """``save_state`` that raises the OSError."""
        d = self.state_dir()
        if d is None:
            return
        if not self._config_saved:  # an ephemeral's, with its first state
            self.save_config()
        state = self.acks.as_dict()
        lss = self.delivery.lss
        state["lss"] = list(lss) if lss is not None else None
        state["lss_resume"] = self.delivery.lss_resume
        if self._slots is None:
            self._slots = StateSlots(d)
        self._slots.write(state, sync=sync or self.stream.js.sync_always)
        self._saved_at = (self.acks.sseq, self.acks.dseq, self._slots.generation)

    def load_state(self, state: dict) -> None:
        self.delivery.skip_list(state.get("lss"), state.get("lss_resume", 0))
        self.acks.load(state)


def create_consumer(stream: "Stream", raw_cfg: dict, *, subject_name: str | None, subject_filter: str | None,
                    durable_api: bool, action: str) -> Consumer:
    """CONSUMER.CREATE / DURABLE.CREATE semantics; raises ApiError."""
    # the name the request asks for: the subject's, or on the legacy
    # ephemeral subject (no name token) the config's
    asked = subject_name if subject_name is not None else raw_cfg.get("name") or ""
    if isinstance(asked, str) and has_path_separators(asked):
        raise errors.consumer_name_path_separators()
    durable = raw_cfg.get("durable_name") or ""
    if durable_api:
        if not durable:
            raise errors.consumer_durable_not_set()
        if durable != subject_name:
            raise errors.consumer_durable_mismatch()
        raw_cfg = dict(raw_cfg, name=subject_name)
    elif subject_name is not None:
        if durable and durable != subject_name:
            raise errors.consumer_durable_mismatch()
        raw_cfg = dict(raw_cfg, name=subject_name)
    elif durable:
        raise errors.consumer_ephemeral_with_durable()
    if subject_filter is not None:
        if raw_cfg.get("filter_subjects"):
            raise errors.consumer_multiple_filters_api()
        if raw_cfg.get("filter_subject") != subject_filter:
            raise errors.consumer_filter_mismatch()
    if (raw_cfg.get("num_replicas") or 0) > 1:
        raise errors.replicas_not_supported()
    cfg = consumerconfig.normalize(raw_cfg, stream.config, durable=bool(durable),
                                   account_max_ack_pending=stream.js.limits.max_ack_pending)
    name = cfg.get("durable_name") or cfg.get("name") or ""
    scfg = stream.config
    existing = stream.consumers.get(name) if name else None
    if existing is not None:
        if action == "create" and _cmp(existing.config) != _cmp(cfg):
            raise errors.consumer_already_exists()
        if _cmp(existing.config) == _cmp(cfg):
            return existing
        consumerconfig.check_update(existing.config, cfg, stream.js.messaging.has_interest)
        if scfg["retention"] == "workqueue":
            _check_wq_unique(stream, name, cfg)
        existing.update_config(cfg)
        return existing
    if action == "update":
        raise errors.consumer_does_not_exist()
    mc = limits.consumer_limit(stream.js, scfg["max_consumers"])
    if mc > 0 and len(stream.consumers) >= mc:
        raise errors.max_consumers()
    if scfg["retention"] == "workqueue":
        if cfg["ack_policy"] not in ("explicit", "flow_control"):
            raise errors.ApiError(400, 10098, "workqueue stream requires explicit ack")
        if cfg["deliver_policy"] != "all":
            raise errors.wq_not_deliver_all()
        _check_wq_unique(stream, name, cfg)
    if cfg.get("durable_name") and byte_len(name) > MAX_NAME_LEN:
        raise errors.consumer_name_too_long(MAX_NAME_LEN)
    if not name:
        name = _gen_name()
        while name in stream.consumers:
            name = _gen_name()
    c = Consumer(stream, name, cfg, now_ns())
    d = c.state_dir()
    try:
        earlier = d is not None and d.is_dir()
    except (OSError, ValueError):  # a name the file system refuses: create_store answers it
        earlier = False
    if earlier:
        # the files of a consumer that could not be restored: kept, never
        # overwritten (nor its state taken for this one's)
        stream.js.messaging.logger.warning("consumer %s > %s: files of an earlier consumer kept aside",
                                        stream.name, name)
        _set_aside(d, with_config=True)
    c.create_store()
    c.select_start()
    if c.durable:
        # on disk before the CREATE is answered, as a stream is (a durable
        # whose creation was confirmed survives a crash straight after)
        try:
            c.save_config()
            c.write_state(sync=True)
        except OSError as e:
            d = c.state_dir()
            if d is not None:
                import shutil

                shutil.rmtree(d, ignore_errors=True)  # made just now: holds nothing
            raise errors.consumer_create(str(e)) from None
    stream.consumers[name] = c
    c.start()
    c.schedule_save()
    if c.journal is not None:
        c.journal.incarnation(c, "create")
    advisories.consumer_action(stream.js, stream.name, name, "create")
    return c


def _check_wq_unique(stream: "Stream", name: str, cfg: dict) -> None:
    mine = consumerconfig.filters_of(cfg)
    others = [c for n, c in stream.consumers.items() if n != name]
    if not others:
        return
    if not mine:
        raise errors.wq_multiple_unfiltered()
    for c in others:
        theirs = c.filters or [">"]
        if any(subjects_overlap(a, b) for a in mine for b in theirs):
            raise errors.wq_not_unique()


def _cmp(cfg: dict) -> dict:
    d = ordered(cfg, CONSUMER_CONFIG_FIELDS)
    d.pop("metadata", None)
    d.pop("pause_until", None)
    return d


def restore_consumers(stream: "Stream", obs_dir: Path) -> None:
    """Each consumer from its directory: the config from meta.json (from
    state.json in the layout of earlier builds), the delivery state from
    state.0 / state.1. Missing or damaged state resets the delivery state
    only (as on nats-server; damaged files are kept aside); a consumer whose
    config cannot be read is reported and its files are left alone."""
    if not obs_dir.exists():
        return
    logger = stream.js.messaging.logger
    for d in sorted(obs_dir.iterdir()):
        try:
            slots, state = _read_state(d, logger, stream.name)
            meta = read_json_checked(d / META_FILE, None)
            if meta is None:  # the layout of earlier builds: config and state in one file
                if state is None or "config" not in state:
                    raise CorruptStateError(f"{d / META_FILE}: missing")
                meta = state
            c = Consumer(stream, d.name, meta["config"], meta["created"])
            c._config_saved = (d / META_FILE).exists()
            c._slots = slots
            if state is not None:
                try:
                    c.load_state(state)
                except (KeyError, ValueError, TypeError) as e:  # checksum fine, contents not
                    logger.error("consumer %s > %s: delivery state unusable (%r); starting over",
                                 stream.name, d.name, e)
                    _set_aside(d)
                    c = Consumer(stream, d.name, meta["config"], meta["created"])
                    c._config_saved, c._slots, state = (d / META_FILE).exists(), slots, None
            if state is None:
                c.select_start()
                logger.warning("consumer %s > %s: no delivery state; starting over from %d",
                               stream.name, d.name, c.acks.sseq)
            stream.consumers[c.name] = c
            c.start()
            if c.journal is not None:
                c.journal.incarnation(c, "restore")
            acks = state.get("acks") if state else None
            if acks:  # answered acks since that state, again
                c.acks.on_acks([(sseq, dseq, 0) for sseq, dseq in acks])
            legacy = d / LEGACY_STATE_FILE
            if not c._config_saved or state is None or legacy.exists() or acks:
                # meta.json and state files for an earlier build's layout, or a new state
                if c.save_state(sync=True):
                    legacy.unlink(missing_ok=True)
        except (CorruptStateError, KeyError, ValueError, TypeError, OSError) as e:
            logger.error("could not restore consumer %s > %s: %s", stream.name, d.name, e)


def _read_state(d: Path, logger, stream: str) -> tuple[StateSlots, dict | None]:
    """The delivery state in ``d`` (from the layout of earlier builds too),
    None when missing or damaged (damaged files are renamed aside, never
    overwritten)."""
    slots = StateSlots(d)
    try:
        state = slots.read()
        if state is None:
            state = read_json_checked(d / LEGACY_STATE_FILE, None)
            if state is not None and not (isinstance(state, dict) and
                                          {"sseq", "dseq", "ack_floor", "pending"} <= state.keys()):
                raise CorruptStateError(f"{d / LEGACY_STATE_FILE}: not a consumer state")
        return slots, state
    except (CorruptStateError, OSError) as e:
        logger.error("consumer %s > %s: %s; kept aside, delivery state reset", stream, d.name, e)
        _set_aside(d)
        return StateSlots(d), None


def _set_aside(d: Path, with_config: bool = False) -> None:
    """Rename the state files in ``d`` (and the config) aside (``<name>.corrupt-<ns>``)."""
    stamp = now_ns()
    for name in (*STATE_FILES, ACK_LOG, LEGACY_STATE_FILE) + ((META_FILE,) if with_config else ()):
        try:
            (d / name).rename(d / f"{name}.corrupt-{stamp}")
        except FileNotFoundError:
            pass
