// nats.js (v3) interop check: exercises a NATS server through nats.js's own
// APIs and prints a deterministic line transcript (one "step<TAB>json" per
// line). Values that legitimately vary between servers/runs (timestamps,
// nuids, server ids/versions, durations) are masked but their *presence* is
// kept, so a missing JSON field still shows up in a diff.
//
//   node check.mjs nats://127.0.0.1:4222 > transcript.txt
//
// Every step is wrapped: an exception is recorded as {error:{name,message,code,...}}
// and the script carries on. Every step has a timeout, so a server that never
// answers shows up as {timeout:...} instead of a hang.
import { connect, headers as mkHeaders, nanos } from "@nats-io/transport-node";
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import { Kvm, KvWatchInclude } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { createHash } from "node:crypto";

const url = process.argv[2] ?? "nats://127.0.0.1:4222";
const STEP_TIMEOUT = Number(process.env.STEP_TIMEOUT_MS ?? 15000);

// ---------------------------------------------------------------- transcript
const out = [];
function emit(step, value) {
  const line = `${step}\t${JSON.stringify(norm(value))}`;
  out.push(line);
  process.stdout.write(line + "\n");
}

const MASK_KEYS = new Set([
  "created", "ts", "time", "timestamp", "timestampNanos", "first_ts", "last_ts",
  "last_active", "mtime", "server_id", "server_name", "version", "go",
  "git_commit", "leader", "nuid", "client_id", "client_ip", "xkey", "port",
  "host", "connect_urls", "ws_connect_urls", "nonce", "api_lvl", "pause_remaining",
]);
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/;

function sortKeys(o) {
  const r = {};
  for (const k of Object.keys(o).sort()) r[k] = o[k];
  return r;
}

function norm(v, key) {
  if (key && MASK_KEYS.has(key) && v !== undefined && v !== null) return "<masked>";
  if (v === undefined) return "<undefined>";
  if (v === null) return null;
  if (typeof v === "bigint") return "<bigint>";
  if (v instanceof Date) return "<date>";
  if (v instanceof Uint8Array) return { bytes: v.length, text: safeText(v) };
  if (Array.isArray(v)) return v.map((x) => norm(x));
  if (typeof v === "object") {
    const r = {};
    for (const [k, x] of Object.entries(v)) r[k] = norm(x, k);
    return sortKeys(r);
  }
  if (typeof v === "string") {
    if (RFC3339.test(v)) return "<rfc3339>";
    return v.replace(/_INBOX\.[A-Za-z0-9.]+/g, "_INBOX.<x>")
      .replace(/(\$O\.[^.]+\.[CM]\.)[A-Za-z0-9_=-]{10,}/g, "$1<nuid>");
  }
  return v;
}

function safeText(u) {
  if (u.length > 64) return `<${u.length} bytes>`;
  return new TextDecoder().decode(u);
}

function errInfo(err) {
  if (!err || typeof err !== "object") return { thrown: String(err) };
  const r = { name: err.constructor?.name ?? err.name, message: err.message };
  if (err.code !== undefined) r.code = err.code;
  if (err.status !== undefined) r.status = err.status;
  if (typeof err.apiError === "function") {
    try { r.api = err.apiError(); } catch { /* ignore */ }
  }
  if (err.cause) r.cause = { name: err.cause.constructor?.name ?? err.cause.name, message: err.cause.message, code: err.cause.code };
  return r;
}

async function step(name, fn, timeout = STEP_TIMEOUT) {
  let timer;
  try {
    const v = await Promise.race([
      fn(),
      new Promise((_, rej) => { timer = setTimeout(() => rej(new StepTimeout(`step exceeded ${timeout}ms`)), timeout); }),
    ]);
    emit(name, v === undefined ? "ok" : v);
    return v;
  } catch (err) {
    emit(name, err instanceof StepTimeout ? { timeout: err.message } : { error: errInfo(err) });
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}
class StepTimeout extends Error {}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const te = new TextEncoder();
const td = new TextDecoder();

function hdrs(h) {
  if (!h) return null;
  const r = {};
  for (const k of h.keys()) r[k] = k === "Nats-Pin-Id" ? h.values(k).map(() => "<pin-id>") : h.values(k);
  const o = sortKeys(r);
  if (h.hasError || h.code) { o["<status>"] = { code: h.code, description: h.description, hasError: h.hasError }; }
  return o;
}

// stream info: config+state, masked
function si(info) {
  if (!info) return info;
  return { config: info.config, state: info.state, keys: Object.keys(info).sort() };
}
// consumer counters
function counters(ci) {
  if (!ci) return ci;
  return {
    delivered: { consumer_seq: ci.delivered?.consumer_seq, stream_seq: ci.delivered?.stream_seq },
    ack_floor: { consumer_seq: ci.ack_floor?.consumer_seq, stream_seq: ci.ack_floor?.stream_seq },
    num_ack_pending: ci.num_ack_pending,
    num_redelivered: ci.num_redelivered,
    num_pending: ci.num_pending,
    num_waiting: ci.num_waiting,
  };
}
function jm(m) {
  return {
    subject: m.subject,
    seq: m.seq,
    data: m.string(),
    redelivered: m.redelivered,
    deliveryCount: m.info.deliveryCount,
    redeliveryCount: m.info.redeliveryCount,
    streamSequence: m.info.streamSequence,
    deliverySequence: m.info.deliverySequence,
    pending: m.info.pending,
    stream: m.info.stream,
    consumer: consName(m.info.consumer),
    headers: hdrs(m.headers),
  };
}
const KNOWN = new Set(["pull1", "pull2", "redeliv", "wip", "nakd", "badf", "multi", "push1", "w1", "fa", "i1", "i2", "hb", "mrb", "mre", "mw", "mb", "gone", "ho", "aall", "anone", "dbl", "trm", "pin", "ovf", "bo"]);
// ordered / ephemeral consumer names embed a nuid or random name: keep the shape only
function consName(n) {
  if (n === undefined || KNOWN.has(n)) return n;
  return n.replace(/[A-Za-z0-9]{22}/, "<nuid>").replace(/^[A-Za-z0-9]{8}$/, "<ephemeral>");
}
function stored(sm) {
  if (!sm) return sm;
  return { subject: sm.subject, seq: sm.seq, data: sm.string(), header: hdrs(sm.header), time: sm.time, lastSequence: sm.lastSequence, pending: sm.pending };
}
async function fetchAll(c, opts, each) {
  const iter = await c.fetch(opts);
  const r = [];
  for await (const m of iter) {
    r.push(jm(m));
    if (each) await each(m, r.length - 1);
  }
  return r;
}
async function collect(lister) {
  const r = [];
  for await (const x of lister) r.push(x);
  return r;
}

// ---------------------------------------------------------------- main
const t0 = Date.now();
const nc = await connect({ servers: url, name: "natsjs-interop" });
emit("connect.info", {
  keys: Object.keys(nc.info).sort(),
  headers: nc.info.headers,
  jetstream: nc.info.jetstream,
  max_payload: nc.info.max_payload,
  proto: nc.info.proto,
});

// ============================================================ core NATS
await step("core.wildcards", async () => {
  const got = { "core.*": [], "core.>": [], "core.a.*": [], "core.a.b": [] };
  const subs = Object.keys(got).map((s) => nc.subscribe(s, { callback: (_e, m) => got[s].push(m.subject) }));
  await nc.flush();
  for (const s of ["core.a", "core.a.b", "core.b.c.d", "core", "core.a.b.c"]) nc.publish(s, s);
  await nc.flush();
  await sleep(100);
  subs.forEach((s) => s.unsubscribe());
  for (const k of Object.keys(got)) got[k].sort();
  return got;
});

await step("core.queue_groups", async () => {
  const counts = [0, 0, 0];
  let plain = 0;
  const subs = counts.map((_, i) => nc.subscribe("qs.x", { queue: "workers", callback: () => counts[i]++ }));
  subs.push(nc.subscribe("qs.x", { callback: () => plain++ }));
  subs.push(nc.subscribe("qs.*", { queue: "other", callback: () => {} }));
  await nc.flush();
  for (let i = 0; i < 30; i++) nc.publish("qs.x", `${i}`);
  await nc.flush();
  await sleep(150);
  subs.forEach((s) => s.unsubscribe());
  return { queue_total: counts.reduce((a, b) => a + b, 0), plain, members_receiving: counts.filter((c) => c > 0).length > 0 };
});

await step("core.auto_unsubscribe_max", async () => {
  const sub = nc.subscribe("auto.x", { max: 2 });
  const got = [];
  const done = (async () => { for await (const m of sub) got.push(m.string()); })();
  for (let i = 0; i < 5; i++) nc.publish("auto.x", `${i}`);
  await nc.flush();
  await done;
  return { got, isClosed: sub.isClosed(), getProcessed: sub.getProcessed() };
});

const svc = nc.subscribe("svc.echo", {
  callback: (_e, m) => {
    const h = mkHeaders();
    h.set("X-Echo", m.headers?.get("X-In") ?? "none");
    m.respond(m.string().toUpperCase(), { headers: h });
  },
});
await nc.flush();

await step("core.request_reply", async () => {
  const h = mkHeaders();
  h.set("X-In", "hello-hdr");
  const r = await nc.request("svc.echo", "hello", { timeout: 2000, headers: h });
  return { data: r.string(), headers: hdrs(r.headers) };
});

await step("core.request_reply_nomux", async () => {
  const r = await nc.request("svc.echo", "nomux", { timeout: 2000, noMux: true });
  return { data: r.string(), headers: hdrs(r.headers) };
});

await step("core.request_many", async () => {
  const s2 = nc.subscribe("svc.many", { callback: (_e, m) => m.respond("a") });
  const s3 = nc.subscribe("svc.many", { callback: (_e, m) => m.respond("b") });
  await nc.flush();
  const it = await nc.requestMany("svc.many", "x", { maxMessages: 2, maxWait: 2000 });
  const r = [];
  for await (const m of it) r.push(m.string());
  s2.unsubscribe(); s3.unsubscribe();
  return r.sort();
});

await step("core.no_responders", async () => {
  await nc.request("nobody.home", "x", { timeout: 2000 });
  return "unexpected reply";
});
await step("core.no_responders_nomux", async () => {
  await nc.request("nobody.home", "x", { timeout: 2000, noMux: true });
  return "unexpected reply";
});
await step("core.request_timeout", async () => {
  const s = nc.subscribe("svc.silent", { callback: () => {} });
  await nc.flush();
  try {
    await nc.request("svc.silent", "x", { timeout: 300 });
    return "unexpected reply";
  } finally { s.unsubscribe(); }
});

await step("core.headers", async () => {
  const sub = nc.subscribe("hdr.test", { max: 3 });
  const got = [];
  const done = (async () => { for await (const m of sub) got.push({ data: m.string(), headers: hdrs(m.headers) }); })();
  const h = mkHeaders();
  h.set("A", "1");
  h.append("A", "2");
  h.set("Mixed-Case-Key", "Value With Spaces");
  h.set("empty", "");
  nc.publish("hdr.test", "with-headers", { headers: h });
  const h2 = mkHeaders();
  h2.set("Only", "header");
  nc.publish("hdr.test", undefined, { headers: h2 });
  nc.publish("hdr.test", "no-headers");
  await nc.flush();
  await done;
  return got;
});

await step("core.max_payload_publish", async () => {
  nc.publish("big.x", new Uint8Array(nc.info.max_payload + 1));
  return "published";
});

await step("core.drain_sub", async () => {
  const sub = nc.subscribe("drain.x");
  const got = [];
  const done = (async () => { for await (const m of sub) got.push(m.string()); })();
  nc.publish("drain.x", "1"); nc.publish("drain.x", "2");
  await nc.flush();
  await sub.drain();
  await done;
  return got;
});
svc.unsubscribe();

// ============================================================ JetStream manager
const jsm = await jetstreamManager(nc);
const js = jetstream(nc);

await step("jsm.account_info", async () => {
  const a = await jsm.getAccountInfo();
  return { keys: Object.keys(a).sort(), streams: a.streams, consumers: a.consumers, limits: a.limits, api_level: a.api?.level };
});

await step("stream.add", async () => si(await jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"], storage: StorageType.File })));
await step("stream.add_same_again", async () => si(await jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"], storage: StorageType.File })));
await step("stream.add_conflicting_config", async () => si(await jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"], storage: StorageType.Memory })));
await step("stream.add_overlapping_subjects", async () => si(await jsm.streams.add({ name: "OTHER", subjects: ["orders.a"] })));
await step("stream.add_bad_name", async () => si(await jsm.streams.add({ name: "BAD.NAME", subjects: ["bad.>"] })));
await step("stream.info_missing", async () => si(await jsm.streams.info("NOPE")));

await step("stream.update", async () => si(await jsm.streams.update("ORDERS", { subjects: ["orders.>", "legacy.orders"], max_msgs: 1000, description: "orders stream" })));
await step("stream.update_storage_change", async () => si(await jsm.streams.update("ORDERS", { storage: StorageType.Memory })));
await step("stream.update_missing", async () => si(await jsm.streams.update("NOPE", { max_msgs: 5 })));

await step("stream.add_second", async () => si(await jsm.streams.add({ name: "AUDIT", subjects: ["audit.*"], storage: StorageType.Memory, max_msgs_per_subject: 2 })));
await step("stream.list", async () => (await collect(jsm.streams.list())).map((s) => ({ name: s.config.name, subjects: s.config.subjects, messages: s.state.messages })).sort((a, b) => a.name.localeCompare(b.name)));
await step("stream.list_subject_filter", async () => (await collect(jsm.streams.list("audit.x"))).map((s) => s.config.name));
await step("stream.names", async () => (await collect(jsm.streams.names())).sort());
await step("stream.names_subject_filter", async () => (await collect(jsm.streams.names("orders.a.b"))).sort());
await step("stream.names_subject_filter_none", async () => (await collect(jsm.streams.names("zzz"))).sort());
await step("stream.find", async () => await jsm.streams.find("legacy.orders"));
await step("stream.find_none", async () => await jsm.streams.find("zzz.zzz"));

// publish some messages
await step("js.publish_batch", async () => {
  const acks = [];
  const subj = ["orders.a", "orders.b", "orders.c", "orders.a", "orders.b", "orders.a", "legacy.orders", "orders.b.x", "orders.a", "orders.c"];
  for (let i = 0; i < subj.length; i++) {
    const h = mkHeaders(); h.set("Idx", `${i + 1}`);
    const pa = await js.publish(subj[i], `msg-${i + 1}`, { headers: h });
    acks.push(pa);
  }
  return acks;
});

await step("stream.info_after_publish", async () => si(await jsm.streams.info("ORDERS")));
await step("msg.get_seq3", async () => stored(await jsm.streams.getMessage("ORDERS", { seq: 3 })));
await step("msg.get_last_by_subj", async () => stored(await jsm.streams.getMessage("ORDERS", { last_by_subj: "orders.b" })));
await step("msg.get_last_by_subj_wild", async () => stored(await jsm.streams.getMessage("ORDERS", { last_by_subj: "orders.*" })));
await step("msg.get_next_by_subj", async () => stored(await jsm.streams.getMessage("ORDERS", { seq: 2, next_by_subj: "orders.a" })));
await step("msg.get_missing_seq", async () => stored(await jsm.streams.getMessage("ORDERS", { seq: 999 })));
await step("msg.get_missing_subj", async () => stored(await jsm.streams.getMessage("ORDERS", { last_by_subj: "orders.zzz" })));
await step("msg.get_stream_object", async () => {
  const s = await jsm.streams.get("ORDERS");
  return stored(await s.getMessage({ seq: 1 }));
});
await step("msg.delete_seq2", async () => await jsm.streams.deleteMessage("ORDERS", 2));
await step("msg.delete_seq4_erase", async () => await jsm.streams.deleteMessage("ORDERS", 4, true));
await step("msg.delete_seq2_again", async () => await jsm.streams.deleteMessage("ORDERS", 2));
await step("msg.delete_seq999", async () => await jsm.streams.deleteMessage("ORDERS", 999));
await step("msg.get_deleted_seq2", async () => stored(await jsm.streams.getMessage("ORDERS", { seq: 2 })));
await step("stream.info_subjects_filter_all", async () => {
  const i = await jsm.streams.info("ORDERS", { subjects_filter: ">" });
  return { subjects: sortKeys(i.state.subjects ?? {}), num_subjects: i.state.num_subjects, messages: i.state.messages, num_deleted: i.state.num_deleted };
});
await step("stream.info_subjects_filter_a", async () => {
  const i = await jsm.streams.info("ORDERS", { subjects_filter: "orders.a" });
  return { subjects: i.state.subjects ?? null };
});
await step("stream.info_subjects_filter_wild", async () => {
  const i = await jsm.streams.info("ORDERS", { subjects_filter: "orders.*" });
  return { subjects: sortKeys(i.state.subjects ?? {}) };
});
await step("stream.info_deleted_details", async () => {
  const i = await jsm.streams.info("ORDERS", { deleted_details: true });
  return { deleted: i.state.deleted ?? null, num_deleted: i.state.num_deleted };
});

// direct get (allow_direct)
await step("stream.update_allow_direct", async () => (await jsm.streams.update("ORDERS", { allow_direct: true })).config.allow_direct);
await step("direct.get_seq", async () => stored(await jsm.direct.getMessage("ORDERS", { seq: 3 })));
await step("direct.get_last_by_subj", async () => stored(await jsm.direct.getMessage("ORDERS", { last_by_subj: "orders.a" })));
await step("direct.get_missing", async () => stored(await jsm.direct.getMessage("ORDERS", { seq: 999 })));
await step("direct.get_batch", async () => {
  const it = await jsm.direct.getBatch("ORDERS", { seq: 1, batch: 3 });
  const r = [];
  for await (const m of it) r.push(stored(m));
  return r;
});
await step("direct.get_last_for", async () => {
  const it = await jsm.direct.getLastMessagesFor("ORDERS", { multi_last: ["orders.a", "orders.b"] });
  const r = [];
  for await (const m of it) r.push(stored(m));
  return r;
});

// purge variants
await step("stream.purge_subject", async () => await jsm.streams.purge("ORDERS", { filter: "orders.c" }));
await step("stream.purge_keep", async () => await jsm.streams.purge("ORDERS", { filter: "orders.a", keep: 1 }));
await step("stream.purge_seq", async () => await jsm.streams.purge("ORDERS", { seq: 6 }));
await step("stream.info_after_purges", async () => si(await jsm.streams.info("ORDERS")));
await step("stream.purge_all", async () => await jsm.streams.purge("ORDERS"));
await step("stream.info_after_purge_all", async () => si(await jsm.streams.info("ORDERS")));
await step("stream.purge_missing", async () => await jsm.streams.purge("NOPE"));

// ============================================================ publish options
await step("pub.msgid_first", async () => await js.publish("orders.a", "dedupe", { msgID: "m-1" }));
await step("pub.msgid_dup", async () => await js.publish("orders.a", "dedupe", { msgID: "m-1" }));
await step("pub.msgid_other", async () => await js.publish("orders.a", "dedupe2", { msgID: "m-2" }));
await step("pub.expect_last_seq_ok", async () => await js.publish("orders.a", "x", { expect: { lastSequence: 12 } }));
await step("pub.expect_last_seq_bad", async () => await js.publish("orders.a", "x", { expect: { lastSequence: 1 } }));
await step("pub.expect_stream_ok", async () => await js.publish("orders.b", "x", { expect: { streamName: "ORDERS" } }));
await step("pub.expect_stream_bad", async () => await js.publish("orders.b", "x", { expect: { streamName: "AUDIT" } }));
await step("pub.expect_last_subject_seq_ok", async () => await js.publish("orders.b", "x", { expect: { lastSubjectSequence: 14 } }));
await step("pub.expect_last_subject_seq_bad", async () => await js.publish("orders.b", "x", { expect: { lastSubjectSequence: 3 } }));
await step("pub.expect_last_subject_seq_zero_new_subject", async () => await js.publish("orders.new", "x", { expect: { lastSubjectSequence: 0 } }));
await step("pub.expect_last_subject_seq_zero_existing", async () => await js.publish("orders.b", "x", { expect: { lastSubjectSequence: 0 } }));
await step("pub.msgid_m3", async () => await js.publish("orders.a", "x", { msgID: "m-3" }));
await step("pub.expect_last_msgid_ok", async () => await js.publish("orders.a", "x", { expect: { lastMsgID: "m-3" } }));
await step("pub.expect_last_msgid_bad", async () => await js.publish("orders.a", "x", { expect: { lastMsgID: "nope" } }));
await step("pub.no_stream", async () => await js.publish("nostream.here", "x", { timeout: 2000 }));
await step("pub.stream_info_after", async () => (await jsm.streams.info("ORDERS")).state);
await step("stream.delete", async () => await jsm.streams.delete("ORDERS"));
await step("stream.delete_again", async () => await jsm.streams.delete("ORDERS"));
await step("stream.info_deleted", async () => si(await jsm.streams.info("ORDERS")));

// limits: discard new / max msgs per subject
await step("limits.max_per_subject", async () => {
  for (let i = 0; i < 4; i++) await js.publish("audit.x", `${i}`);
  await js.publish("audit.y", "y");
  const i = await jsm.streams.info("AUDIT", { subjects_filter: ">" });
  return { state: i.state };
});
await step("limits.discard_new_add", async () => si(await jsm.streams.add({ name: "SMALL", subjects: ["small.>"], max_msgs: 2, discard: DiscardPolicy.New })));
await step("limits.discard_new_pub", async () => {
  const r = [];
  for (let i = 0; i < 3; i++) {
    try { r.push((await js.publish("small.x", `${i}`)).seq); } catch (e) { r.push(errInfo(e)); }
  }
  return r;
});
await step("limits.delete_streams", async () => [await jsm.streams.delete("SMALL"), await jsm.streams.delete("AUDIT")]);

// ============================================================ consumers
await step("cs.stream_add", async () => si(await jsm.streams.add({ name: "CS", subjects: ["cs.>"] })));
await step("cs.publish5", async () => {
  const r = [];
  for (const [i, s] of ["cs.a", "cs.b", "cs.a", "cs.c", "cs.b"].entries()) r.push((await js.publish(s, `c${i + 1}`)).seq);
  return r;
});

const pullCfg = { durable_name: "pull1", ack_policy: AckPolicy.Explicit, ack_wait: nanos(1000), max_deliver: 5 };
await step("cons.add_pull1", async () => await jsm.consumers.add("CS", pullCfg));
await step("cons.add_pull1_same", async () => counters(await jsm.consumers.add("CS", pullCfg)));
await step("cons.add_pull1_conflict", async () => counters(await jsm.consumers.add("CS", { ...pullCfg, ack_policy: AckPolicy.None })));
await step("cons.info_missing", async () => await jsm.consumers.info("CS", "nope"));
await step("cons.info_missing_stream", async () => await jsm.consumers.info("NOPE", "nope"));
await step("cons.add_bad_filter", async () => counters(await jsm.consumers.add("CS", { durable_name: "badf", ack_policy: AckPolicy.Explicit, filter_subject: "other.>" })));

let pull1 = null;
await step("cons.get_pull1", async () => { pull1 = await js.consumers.get("CS", "pull1"); return "ok"; });
const ci = async (name) => counters(await jsm.consumers.info("CS", name));

await step("cons.pull1.fetch1_ack1_leave2", async () => fetchAll(pull1, { max_messages: 2, expires: 1000 }, async (m, i) => { if (i === 0) await m.ackAck(); }));
await step("cons.pull1.info1", async () => ci("pull1"));
await step("cons.pull1.fetch2_nak3_term4", async () => fetchAll(pull1, { max_messages: 2, expires: 1000 }, async (m, i) => { if (i === 0) m.nak(); else m.term("no good"); }));
await sleep(100);
await step("cons.pull1.info2", async () => ci("pull1"));
await step("cons.pull1.fetch3_redelivered_nak", async () => fetchAll(pull1, { max_messages: 1, expires: 1000 }, async (m) => { await m.ackAck(); }));
await step("cons.pull1.info3", async () => ci("pull1"));
await sleep(1500);
await step("cons.pull1.fetch4_after_ackwait", async () => fetchAll(pull1, { max_messages: 5, expires: 1000 }, async (m) => { await m.ackAck(); }));
await step("cons.pull1.info4", async () => ci("pull1"));
await step("cons.pull1.fetch5_empty", async () => fetchAll(pull1, { max_messages: 3, expires: 1000 }));
await step("cons.pull1.info5", async () => ci("pull1"));
await step("cons.pull1.next_empty", async () => { const m = await pull1.next({ expires: 1000 }); return m ? jm(m) : null; });

await step("cons.pull1.num_waiting_during_fetch", async () => {
  const p = fetchAll(pull1, { max_messages: 1, expires: 1500 });
  await sleep(500);
  const during = await ci("pull1");
  const got = await p;
  await sleep(100);
  return { during, got, after: await ci("pull1") };
});

// explicit redelivery check
await step("cons.add_redeliv", async () => counters(await jsm.consumers.add("CS", { durable_name: "redeliv", ack_policy: AckPolicy.Explicit, ack_wait: nanos(1000), max_deliver: 2, filter_subject: "cs.a" })));
let redeliv = null;
await step("cons.get_redeliv", async () => { redeliv = await js.consumers.get("CS", "redeliv"); return "ok"; });
await step("cons.redeliv.fetch1_noack", async () => fetchAll(redeliv, { max_messages: 1, expires: 1000 }));
await step("cons.redeliv.info1", async () => ci("redeliv"));
await sleep(1500);
await step("cons.redeliv.info1b_after_wait", async () => ci("redeliv"));
await step("cons.redeliv.fetch2_redelivered", async () => fetchAll(redeliv, { max_messages: 1, expires: 1000 }));
await step("cons.redeliv.info2", async () => ci("redeliv"));
await sleep(1500);
await step("cons.redeliv.fetch3_after_max_deliver", async () => fetchAll(redeliv, { max_messages: 1, expires: 1000 }, async (m) => { await m.ackAck(); }));
await step("cons.redeliv.info3", async () => ci("redeliv"));

// working() extends ack_wait
await step("cons.add_wip", async () => counters(await jsm.consumers.add("CS", { durable_name: "wip", ack_policy: AckPolicy.Explicit, ack_wait: nanos(1000), filter_subject: "cs.c" })));
let wip = null;
await step("cons.get_wip", async () => { wip = await js.consumers.get("CS", "wip"); return "ok"; });
await step("cons.wip.working_extends", async () => {
  const r = {};
  const msgs = [];
  for await (const m of await wip.fetch({ max_messages: 1, expires: 1000 })) msgs.push(m);
  r.first = msgs.map(jm);
  // ack_wait is 1s; keep sending +WPI every 600ms while a 1s fetch waits: the
  // message must not come back while work is in progress
  const keep = setInterval(() => msgs[0]?.working(), 600);
  await sleep(600);
  r.refetch_while_working = await fetchAll(wip, { max_messages: 1, expires: 1500 });
  clearInterval(keep);
  r.info_before_ack = await ci("wip");
  await msgs[0]?.ackAck();
  r.info_after_ack = await ci("wip");
  return r;
});

// nak with delay
await step("cons.add_nakdelay", async () => counters(await jsm.consumers.add("CS", { durable_name: "nakd", ack_policy: AckPolicy.Explicit, ack_wait: nanos(5000), filter_subject: "cs.c" })));
let nakd = null;
await step("cons.get_nakd", async () => { nakd = await js.consumers.get("CS", "nakd"); return "ok"; });
await step("cons.nakd.sequence", async () => {
  const r = {};
  r.first = await fetchAll(nakd, { max_messages: 1, expires: 1000 }, async (m) => m.nak(2500));
  r.immediate = await fetchAll(nakd, { max_messages: 1, expires: 1000 });
  r.info_during_delay = await ci("nakd");
  await sleep(1700);
  r.after_delay = await fetchAll(nakd, { max_messages: 1, expires: 1000 }, async (m) => { await m.ackAck(); });
  r.info = await ci("nakd");
  return r;
});

// consume()
await step("cons.add_pull2", async () => counters(await jsm.consumers.add("CS", { durable_name: "pull2", ack_policy: AckPolicy.Explicit })));
await step("cons.pull2.consume", async () => {
  const c = await js.consumers.get("CS", "pull2");
  const iter = await c.consume({ max_messages: 10, expires: 2000 });
  const got = [];
  const statuses = [];
  (async () => { for await (const s of iter.status()) statuses.push(s.type); })().catch(() => {});
  let waiting;
  for await (const m of iter) {
    got.push(jm(m));
    m.ack();
    if (got.length === 5) {
      await sleep(300);
      const w = await ci("pull2");
      waiting = { ...w, num_waiting: w.num_waiting > 0 ? ">0" : w.num_waiting };
      break;
    }
  }
  await iter.close();
  await sleep(200);
  return { got, info_while_consuming: waiting, info_after_close: await ci("pull2") };
});
await step("cons.pull2.consume_callback", async () => {
  const c = await js.consumers.get("CS", "pull2");
  const got = [];
  await js.publish("cs.d", "c6");
  const iter = await c.consume({ max_messages: 5, expires: 1000, callback: (m) => { got.push(jm(m)); m.ack(); } });
  for (let i = 0; i < 20 && got.length < 1; i++) await sleep(100);
  await iter.close();
  return got;
});

// ephemeral + listing + update + delete
await step("cons.add_ephemeral", async () => {
  const i = await jsm.consumers.add("CS", { ack_policy: AckPolicy.Explicit, inactive_threshold: nanos(60000) });
  return { name_len: i.name.length, durable_name: i.config.durable_name ?? null, counters: counters(i) };
});
await step("cons.add_named_ephemeral_filters", async () => {
  const i = await jsm.consumers.add("CS", { name: "multi", ack_policy: AckPolicy.Explicit, filter_subjects: ["cs.a", "cs.b"], inactive_threshold: nanos(60000) });
  return { name: i.name, config: i.config, counters: counters(i) };
});
await step("cons.list", async () => (await collect(jsm.consumers.list("CS"))).map((c) => consName(c.config.durable_name ?? c.name)).sort());
await step("cons.info_pull1_full", async () => await jsm.consumers.info("CS", "pull1"));
await step("cons.update", async () => (await jsm.consumers.update("CS", "pull1", { ack_wait: nanos(2000), max_deliver: 7, description: "updated" })).config);
await step("cons.update_bad", async () => (await jsm.consumers.update("CS", "pull1", { deliver_policy: DeliverPolicy.Last })).config);
await step("cons.delete", async () => await jsm.consumers.delete("CS", "pull2"));
await step("cons.delete_again", async () => await jsm.consumers.delete("CS", "pull2"));
await step("cons.get_deleted", async () => { await js.consumers.get("CS", "pull2"); return "got"; });

// ordered consumers
await step("ordered.fetch_all", async () => {
  const c = await js.consumers.get("CS");
  return fetchAll(c, { max_messages: 10, expires: 1000 });
});
await step("ordered.consume_filtered", async () => {
  const c = await js.consumers.get("CS", { filter_subjects: ["cs.b"] });
  const iter = await c.consume({ expires: 2000 });
  const got = [];
  for await (const m of iter) { got.push(jm(m)); if (got.length === 2) break; }
  await iter.close();
  return got;
});
await step("ordered.last_per_subject", async () => {
  const c = await js.consumers.get("CS", { deliver_policy: DeliverPolicy.LastPerSubject });
  return fetchAll(c, { max_messages: 10, expires: 1000 });
});
await step("ordered.next", async () => {
  const c = await js.consumers.get("CS", { opt_start_seq: 3, deliver_policy: DeliverPolicy.StartSequence });
  const m = await c.next({ expires: 1000 });
  return m ? jm(m) : null;
});

await step("ordered.server_side_config", async () => {
  // what nats.js asks the server for when it creates an ordered pull consumer, as the server stores it
  const before = new Set((await collect(jsm.consumers.list("CS"))).map((x) => x.name));
  const c = await js.consumers.get("CS", { filter_subjects: ["cs.c"] });
  const iter = await c.fetch({ max_messages: 1, expires: 1000 });
  for await (const _m of iter) { /* one */ }
  const mine = (await collect(jsm.consumers.list("CS"))).filter((x) => !before.has(x.name));
  return mine.map((x) => ({ name: consName(x.name), config: { ...x.config, name: consName(x.config.name) }, counters: counters(x) }));
});
// push consumers
await step("push.add", async () => {
  const i = await jsm.consumers.add("CS", { durable_name: "push1", deliver_subject: "push.deliver.1", ack_policy: AckPolicy.Explicit, idle_heartbeat: nanos(1000), flow_control: true });
  return { config: i.config, push_bound: i.push_bound ?? null, counters: counters(i) };
});
await step("push.consume", async () => {
  const c = await js.consumers.getPushConsumer("CS", "push1");
  const iter = await c.consume();
  const got = [];
  for await (const m of iter) { got.push(jm(m)); m.ack(); if (got.length === 6) break; }
  await sleep(200);
  const info = await jsm.consumers.info("CS", "push1");
  await iter.close();
  return { got, counters: counters(info), push_bound: info.push_bound ?? null };
});
await step("push.ordered", async () => {
  const c = await js.consumers.getPushConsumer("CS");
  const iter = await c.consume();
  const got = [];
  for await (const m of iter) { got.push(jm(m)); if (got.length === 6) break; }
  await iter.close();
  return got;
});
await step("push.ordered_server_side_config", async () => {
  const before = new Set((await collect(jsm.consumers.list("CS"))).map((x) => x.name));
  const c = await js.consumers.getPushConsumer("CS", { filter_subjects: ["cs.c"] });
  const iter = await c.consume();
  for await (const _m of iter) break;
  const mine = (await collect(jsm.consumers.list("CS"))).filter((x) => !before.has(x.name));
  await iter.close();
  return mine.map((x) => ({ name: consName(x.name), config: { ...x.config, name: consName(x.config.name), deliver_subject: "<inbox>" }, push_bound: x.push_bound ?? null, counters: counters(x) }));
});
await step("push.fetch_on_push_consumer", async () => {
  const c = await js.consumers.get("CS", "push1");
  return fetchAll(c, { max_messages: 1, expires: 1000 });
});

// pull protocol details: heartbeats, limits, deletion while waiting
await step("pull.consume_heartbeats", async () => {
  await jsm.consumers.add("CS", { durable_name: "hb", ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.New });
  const c = await js.consumers.get("CS", "hb");
  const iter = await c.consume({ expires: 2000, idle_heartbeat: 500 });
  const types = new Set();
  (async () => { for await (const s of iter.status()) types.add(s.type); })().catch(() => {});
  (async () => { for await (const _m of iter) { /* none expected */ } })().catch(() => {});
  await sleep(3000);
  await iter.close();
  types.delete("debug");
  return [...types].sort();
});
await step("pull.fetch_heartbeat_missing_check", async () => {
  const c = await js.consumers.get("CS", "hb");
  const types = new Set();
  const iter = await c.fetch({ max_messages: 1, expires: 2000, idle_heartbeat: 500 });
  (async () => { for await (const s of iter.status()) types.add(s.type); })().catch(() => {});
  const got = [];
  for await (const m of iter) got.push(m.seq);
  types.delete("debug");
  return { got, types: [...types].sort() };
});
await step("pull.max_request_batch", async () => {
  await jsm.consumers.add("CS", { durable_name: "mrb", ack_policy: AckPolicy.Explicit, max_batch: 2 });
  const c = await js.consumers.get("CS", "mrb");
  return fetchAll(c, { max_messages: 5, expires: 1000 });
});
await step("pull.max_request_expires", async () => {
  await jsm.consumers.add("CS", { durable_name: "mre", ack_policy: AckPolicy.Explicit, max_expires: nanos(1000) });
  const c = await js.consumers.get("CS", "mre");
  return fetchAll(c, { max_messages: 1, expires: 2000 });
});
await step("pull.max_waiting", async () => {
  await jsm.consumers.add("CS", { durable_name: "mw", ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.New, max_waiting: 1 });
  const c = await js.consumers.get("CS", "mw");
  const p1 = fetchAll(c, { max_messages: 1, expires: 1500 }).catch((e) => ({ error: errInfo(e) }));
  await sleep(200);
  const p2 = fetchAll(c, { max_messages: 1, expires: 1500 }).catch((e) => ({ error: errInfo(e) }));
  return { first: await p1, second: await p2 };
});
await step("pull.max_bytes", async () => {
  await jsm.consumers.add("CS", { durable_name: "mb", ack_policy: AckPolicy.Explicit });
  const c = await js.consumers.get("CS", "mb");
  const r = await fetchAll(c, { max_bytes: 400, expires: 1000 });
  return r.map((m) => m.seq);
});
await step("pull.consumer_deleted_while_waiting", async () => {
  await jsm.consumers.add("CS", { durable_name: "gone", ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.New });
  const c = await js.consumers.get("CS", "gone");
  const types = new Set();
  const iter = await c.fetch({ max_messages: 1, expires: 3000 });
  (async () => { for await (const s of iter.status()) types.add(s.type); })().catch(() => {});
  setTimeout(() => jsm.consumers.delete("CS", "gone").catch(() => {}), 300);
  const t = Date.now();
  let err = null;
  try { for await (const _m of iter) { /* none */ } } catch (e) { err = errInfo(e); }
  types.delete("debug");
  return { error: err, ended_before_expiry: Date.now() - t < 2500, types: [...types].sort() };
});
await step("pull.headers_only", async () => {
  await jsm.consumers.add("CS", { durable_name: "ho", ack_policy: AckPolicy.None, headers_only: true });
  const c = await js.consumers.get("CS", "ho");
  return fetchAll(c, { max_messages: 2, expires: 1000 });
});
await step("pull.ack_all", async () => {
  await jsm.consumers.add("CS", { durable_name: "aall", ack_policy: AckPolicy.All });
  const c = await js.consumers.get("CS", "aall");
  const msgs = [];
  for await (const m of await c.fetch({ max_messages: 3, expires: 1000 })) msgs.push(m);
  const before = await ci("aall");
  await msgs[2]?.ackAck();
  return { seqs: msgs.map((m) => m.seq), before, after: await ci("aall") };
});
await step("pull.ack_none", async () => {
  await jsm.consumers.add("CS", { durable_name: "anone", ack_policy: AckPolicy.None });
  const c = await js.consumers.get("CS", "anone");
  const r = await fetchAll(c, { max_messages: 2, expires: 1000 });
  return { seqs: r.map((m) => m.seq), info: await ci("anone") };
});
await step("pull.double_ackack", async () => {
  await jsm.consumers.add("CS", { durable_name: "dbl", ack_policy: AckPolicy.Explicit });
  const c = await js.consumers.get("CS", "dbl");
  const msgs = [];
  for await (const m of await c.fetch({ max_messages: 1, expires: 1000 })) msgs.push(m);
  const r = {};
  try { r.first = await msgs[0].ackAck({ timeout: 1000 }); } catch (e) { r.first = errInfo(e); }
  try { r.second = await msgs[0].ackAck({ timeout: 1000 }); } catch (e) { r.second = errInfo(e); }
  r.info = await ci("dbl");
  return r;
});
await step("pull.term_then_info", async () => {
  await jsm.consumers.add("CS", { durable_name: "trm", ack_policy: AckPolicy.Explicit, ack_wait: nanos(1000) });
  const c = await js.consumers.get("CS", "trm");
  await fetchAll(c, { max_messages: 1, expires: 1000 }, async (m) => m.term("bad"));
  await sleep(1300);
  const again = await fetchAll(c, { max_messages: 1, expires: 1000 });
  return { again: again.map((m) => m.seq), info: await ci("trm") };
});
await step("cons.pause_resume", async () => {
  const until = new Date(Date.now() + 60_000);
  const p = await jsm.consumers.pause("CS", "mb", until);
  const info = await jsm.consumers.info("CS", "mb");
  const r = await jsm.consumers.resume("CS", "mb");
  const info2 = await jsm.consumers.info("CS", "mb");
  // nats.js resumes by pausing until new Date(0): the epoch values are deterministic, show them raw
  const raw = (v) => (v === undefined ? "<absent>" : `raw:${v}`);
  return {
    pause: p,
    paused_info: { paused: info.paused, pause_remaining: info.pause_remaining ? ">0" : info.pause_remaining, pause_until: info.config.pause_until },
    resume: { ...r, pause_until: raw(r.pause_until) },
    resumed_info: { paused: raw(info2.paused), pause_remaining: raw(info2.pause_remaining), config_pause_until: raw(info2.config.pause_until) },
  };
});
await step("cons.consumer_object_methods", async () => {
  const c = await js.consumers.get("CS", "dbl");
  const i = await c.info();
  const cached = await c.info(true);
  const del = await c.delete();
  return { name: i.name, cached_same: cached.name === i.name, deleted: del };
});
await step("ordered.recover_after_delete", async () => {
  const c = await js.consumers.get("CS", { filter_subjects: ["cs.a"] });
  const iter = await c.consume({ expires: 1000 });
  const types = new Set();
  (async () => { for await (const s of iter.status()) types.add(s.type); })().catch(() => {});
  const got = [];
  let deleted = false;
  const deadline = Date.now() + 8000;
  for await (const m of iter) {
    got.push(m.seq);
    if (!deleted && got.length === 1) {
      deleted = true;
      const names = (await collect(jsm.consumers.list("CS"))).map((x) => x.name).filter((n) => /_\d+$/.test(n));
      for (const n of names) await jsm.consumers.delete("CS", n).catch(() => {});
      await js.publish("cs.a", "after-delete");
    }
    if (m.string() === "after-delete" || Date.now() > deadline) break;
  }
  await iter.close();
  types.delete("debug"); types.delete("next"); types.delete("discard"); types.delete("heartbeats_missed");
  return { got, types: [...types].sort() };
});
await step("stream.max_msg_size", async () => {
  await jsm.streams.add({ name: "TINY", subjects: ["tiny.>"], max_msg_size: 10 });
  const r = {};
  try { r.small = (await js.publish("tiny.x", "123")).seq; } catch (e) { r.small = errInfo(e); }
  try { r.big = (await js.publish("tiny.x", "12345678901234567890")).seq; } catch (e) { r.big = errInfo(e); }
  await jsm.streams.delete("TINY");
  return r;
});
await step("stream.mirror", async () => {
  await jsm.streams.add({ name: "MIR", mirror: { name: "CS" } });
  let st;
  for (let i = 0; i < 30; i++) { st = (await jsm.streams.info("MIR")).state; if (st.messages >= 6) break; await sleep(100); }
  const info = await jsm.streams.info("MIR");
  await jsm.streams.delete("MIR");
  return { messages: st.messages, last_seq: st.last_seq, mirror: info.mirror ? { name: info.mirror.name, lag: info.mirror.lag } : null };
});
await step("stream.sources", async () => {
  await jsm.streams.add({ name: "SRC", sources: [{ name: "CS", filter_subject: "cs.a" }] });
  let st;
  for (let i = 0; i < 30; i++) { st = (await jsm.streams.info("SRC")).state; if (st.messages >= 3) break; await sleep(100); }
  const m = await jsm.streams.getMessage("SRC", { seq: 1 });
  await jsm.streams.delete("SRC");
  const first = stored(m);
  if (first?.header?.["Nats-Stream-Source"]) first.header["Nats-Stream-Source"] = first.header["Nats-Stream-Source"].map((v) => v.replace(/ \S+$/, " <hash>"));
  return { messages: st.messages, first };
});

// 2.11+/2.14 consumer features (natslab's INFO says version 2.15.1, so nats.js enables them)
await step("v214.consumer_reset", async () => {
  const r = await jsm.consumers.reset("CS", "trm", 1);
  return { reset_seq: r.reset_seq, counters: counters(r), after: await ci("trm") };
});
await step("v211.pinned_client", async () => {
  await jsm.consumers.add("CS", { durable_name: "pin", ack_policy: AckPolicy.Explicit, priority_policy: "pinned_client", priority_groups: ["g"], priority_timeout: nanos(5000) });
  const c = await js.consumers.get("CS", "pin");
  const got = await fetchAll(c, { max_messages: 1, expires: 1000, group: "g" }, async (m) => { await m.ackAck(); });
  const info = await jsm.consumers.info("CS", "pin");
  return { got, priority_groups: info.priority_groups?.map((g) => ({ group: g.group, pinned: !!g.pinned_client_id })) ?? null, config: { priority_policy: info.config.priority_policy, priority_groups: info.config.priority_groups, priority_timeout: info.config.priority_timeout } };
});
await step("v211.pinned_wrong_group", async () => {
  const c = await js.consumers.get("CS", "pin");
  return fetchAll(c, { max_messages: 1, expires: 1000, group: "other" });
});
await step("v211.overflow", async () => {
  await jsm.consumers.add("CS", { durable_name: "ovf", ack_policy: AckPolicy.Explicit, priority_policy: "overflow", priority_groups: ["g"] });
  const c = await js.consumers.get("CS", "ovf");
  const high = await fetchAll(c, { max_messages: 1, expires: 1000, group: "g", min_pending: 100 });
  const low = await fetchAll(c, { max_messages: 1, expires: 1000, group: "g", min_pending: 1 }, async (m) => { await m.ackAck(); });
  return { high, low: low.map((m) => m.seq) };
});
await step("v211.backoff_metadata", async () => {
  const i = await jsm.consumers.add("CS", { durable_name: "bo", ack_policy: AckPolicy.Explicit, max_deliver: 3, backoff: [nanos(1000), nanos(2000)], metadata: { team: "x" } });
  return { ack_wait: i.config.ack_wait, backoff: i.config.backoff, metadata: i.config.metadata };
});
await step("cs.stream_delete", async () => await jsm.streams.delete("CS"));

// ============================================================ retention
await step("ret.interest_add", async () => si(await jsm.streams.add({ name: "INT", subjects: ["int.>"], retention: RetentionPolicy.Interest })));
await step("ret.interest_pub_no_consumers", async () => {
  for (let i = 0; i < 3; i++) await js.publish("int.x", `${i}`);
  return (await jsm.streams.info("INT")).state;
});
await step("ret.interest_two_consumers", async () => {
  await jsm.consumers.add("INT", { durable_name: "i1", ack_policy: AckPolicy.Explicit });
  await jsm.consumers.add("INT", { durable_name: "i2", ack_policy: AckPolicy.Explicit });
  const acks = [];
  for (let i = 0; i < 3; i++) acks.push((await js.publish("int.x", `b${i}`)).seq);
  return { acks, state: (await jsm.streams.info("INT")).state };
});
await step("ret.interest_ack_by_one", async () => {
  const c = await js.consumers.get("INT", "i1");
  const got = await fetchAll(c, { max_messages: 3, expires: 1000 }, async (m) => { await m.ackAck(); });
  return { got: got.map((m) => m.seq), state: (await jsm.streams.info("INT")).state };
});
await step("ret.interest_ack_by_both", async () => {
  const c = await js.consumers.get("INT", "i2");
  const got = await fetchAll(c, { max_messages: 2, expires: 1000 }, async (m) => { await m.ackAck(); });
  return { got: got.map((m) => m.seq), state: (await jsm.streams.info("INT")).state, i2: await counters(await jsm.consumers.info("INT", "i2")) };
});
await step("ret.interest_delete_consumer", async () => {
  await jsm.consumers.delete("INT", "i2");
  return (await jsm.streams.info("INT")).state;
});
await step("ret.interest_stream_delete", async () => await jsm.streams.delete("INT"));

await step("ret.wq_add", async () => si(await jsm.streams.add({ name: "WQ", subjects: ["wq.>"], retention: RetentionPolicy.Workqueue })));
await step("ret.wq_pub", async () => {
  for (const s of ["wq.a", "wq.b", "wq.a"]) await js.publish(s, s);
  return (await jsm.streams.info("WQ")).state;
});
await step("ret.wq_consumer", async () => counters(await jsm.consumers.add("WQ", { durable_name: "w1", ack_policy: AckPolicy.Explicit })));
await step("ret.wq_second_unfiltered", async () => counters(await jsm.consumers.add("WQ", { durable_name: "w2", ack_policy: AckPolicy.Explicit })));
await step("ret.wq_overlapping_filtered", async () => {
  await jsm.consumers.delete("WQ", "w1");
  await jsm.consumers.add("WQ", { durable_name: "fa", ack_policy: AckPolicy.Explicit, filter_subject: "wq.a" });
  return counters(await jsm.consumers.add("WQ", { durable_name: "fa2", ack_policy: AckPolicy.Explicit, filter_subject: "wq.*" }));
});
await step("ret.wq_ack_pending", async () => counters(await jsm.consumers.add("WQ", { durable_name: "ack_none", ack_policy: AckPolicy.None, filter_subject: "wq.b" })));
await step("ret.wq_fetch_ack", async () => {
  const c = await js.consumers.get("WQ", "fa");
  const got = await fetchAll(c, { max_messages: 5, expires: 1000 }, async (m, i) => { if (i === 0) await m.ackAck(); });
  await sleep(100);
  return { got: got.map((m) => m.seq), state: (await jsm.streams.info("WQ")).state, fa: counters(await jsm.consumers.info("WQ", "fa")) };
});
await step("ret.wq_get_removed", async () => stored(await jsm.streams.getMessage("WQ", { seq: 1 })));
await step("ret.wq_stream_delete", async () => await jsm.streams.delete("WQ"));

// ============================================================ KV
const kvm = new Kvm(nc);
let kv;
await step("kv.create", async () => {
  kv = await kvm.create("cfg", { history: 5 });
  const s = await kv.status();
  return { bucket: s.bucket, values: s.values, history: s.history, ttl: s.ttl, backingStore: s.backingStore, size: s.size, streamInfo: si(s.streamInfo) };
});
await step("kv.put_a1", async () => await kv.put("a", "1"));
await step("kv.get_a", async () => { const e = await kv.get("a"); return e && { key: e.key, value: e.string(), revision: e.revision, operation: e.operation, delta: e.delta, length: e.length }; });
await step("kv.put_a2", async () => await kv.put("a", "2"));
await step("kv.update_a_ok", async () => await kv.update("a", "3", 2));
await step("kv.update_a_wrong_rev", async () => await kv.update("a", "4", 1));
await step("kv.create_a_exists", async () => await kv.create("a", "x"));
await step("kv.create_b", async () => await kv.create("b", "b1"));
await step("kv.put_dotted", async () => [await kv.put("x.y.z", "deep"), await kv.put("x.w", "shallow")]);
await step("kv.get_missing", async () => await kv.get("missing"));
await step("kv.get_revision", async () => { const e = await kv.get("a", { revision: 1 }); return e && { value: e.string(), revision: e.revision }; });
await step("kv.delete_b", async () => await kv.delete("b"));
await step("kv.get_deleted_b", async () => { const e = await kv.get("b"); return e && { key: e.key, value: e.string(), revision: e.revision, operation: e.operation }; });
await step("kv.create_b_after_delete", async () => await kv.create("b", "b2"));
await step("kv.delete_b_with_lastrev_bad", async () => await kv.delete("b", { previousSeq: 1 }));
await step("kv.purge_a", async () => await kv.purge("a"));
await step("kv.get_purged_a", async () => { const e = await kv.get("a"); return e && { key: e.key, revision: e.revision, operation: e.operation }; });
await step("kv.history_a", async () => {
  const it = await kv.history({ key: "a" });
  const r = [];
  for await (const e of it) r.push({ key: e.key, value: e.string(), revision: e.revision, operation: e.operation });
  return r;
});
await step("kv.put_more", async () => [await kv.put("a", "5"), await kv.put("c", "c1")]);
await step("kv.keys", async () => { const r = []; for await (const k of await kv.keys()) r.push(k); return r.sort(); });
await step("kv.keys_filter", async () => { const r = []; for await (const k of await kv.keys("x.>")) r.push(k); return r.sort(); });
await step("kv.history_all", async () => {
  const it = await kv.history();
  const r = [];
  for await (const e of it) r.push({ key: e.key, value: e.string(), revision: e.revision, operation: e.operation });
  return r;
});
await step("kv.watch", async () => {
  const it = await kv.watch({ include: KvWatchInclude.LastValue });
  const r = [];
  let sent = false;
  for await (const e of it) {
    r.push({ key: e.key, value: e.string(), revision: e.revision, operation: e.operation, isUpdate: e.isUpdate, delta: e.delta });
    if (!sent && e.delta === 0) { sent = true; await kv.put("c", "c2"); await kv.delete("x.w"); }
    if (e.isUpdate && e.key === "x.w") break;
  }
  it.stop();
  return r;
});
await step("kv.watch_history_key", async () => {
  const it = await kv.watch({ key: "c", include: KvWatchInclude.AllHistory });
  const r = [];
  for await (const e of it) { r.push({ key: e.key, value: e.string(), revision: e.revision, operation: e.operation, delta: e.delta }); if (e.delta === 0) break; }
  it.stop();
  return r;
});
await step("kv.watch_updates_only", async () => {
  const it = await kv.watch({ include: KvWatchInclude.UpdatesOnly });
  const r = [];
  setTimeout(() => kv.put("u", "new").catch(() => {}), 200);
  for await (const e of it) { r.push({ key: e.key, value: e.string(), revision: e.revision, operation: e.operation, isUpdate: e.isUpdate }); break; }
  it.stop();
  return r;
});
await step("kv.status_after", async () => { const s = await kv.status(); return { values: s.values, history: s.history, bucket: s.bucket, size: s.size }; });
await step("kv.list_buckets", async () => (await collect(kvm.list())).map((s) => ({ bucket: s.bucket, values: s.values, history: s.history })));
await step("kv.open_missing", async () => { await kvm.open("nope"); return "opened"; });
await step("kv.destroy", async () => await kv.destroy());

// ============================================================ Object store
const objm = new Objm(nc);
let os;
const BLOB = new Uint8Array(1024 * 1024 + 12345);
for (let i = 0; i < BLOB.length; i++) BLOB[i] = (i * 31 + (i >> 8)) & 0xff;
const BLOB_SHA = createHash("sha256").update(BLOB).digest("base64url");
await step("obj.create", async () => {
  os = await objm.create("files", { description: "interop" });
  const s = await os.status();
  return { bucket: s.bucket, description: s.description, sealed: s.sealed, size: s.size, storage: s.storage, streamInfo: si(s.streamInfo) };
});
await step("obj.put_1MiB", async () => {
  const rs = new ReadableStream({
    pull(ctrl) {
      // feed in 100 KB slices
      if (!this.off) this.off = 0;
      if (this.off >= BLOB.length) { ctrl.close(); return; }
      ctrl.enqueue(BLOB.subarray(this.off, this.off + 100_000));
      this.off += 100_000;
    },
  });
  const info = await os.put({ name: "blob.bin", description: "a blob", metadata: { k: "v" } }, rs);
  return { info, expected_digest: `SHA-256=${BLOB_SHA}` };
});
await step("obj.get_1MiB", async () => {
  const r = await os.get("blob.bin");
  if (!r) return null;
  const chunks = [];
  const reader = r.data.getReader();
  for (;;) { const { done, value } = await reader.read(); if (done) break; chunks.push(value); }
  const buf = Buffer.concat(chunks.map((c) => Buffer.from(c)));
  const err = await r.error;
  return { size: buf.length, sha_matches: createHash("sha256").update(buf).digest("base64url") === BLOB_SHA, bytes_equal: Buffer.compare(buf, Buffer.from(BLOB)) === 0, error: err ? errInfo(err) : null, info: r.info };
});
await step("obj.info", async () => await os.info("blob.bin"));
await step("obj.put_blob_small", async () => await os.putBlob({ name: "small.txt" }, te.encode("hello object")));
await step("obj.get_blob_small", async () => { const b = await os.getBlob("small.txt"); return b ? td.decode(b) : null; });
await step("obj.put_empty", async () => await os.putBlob({ name: "empty" }, new Uint8Array(0)));
await step("obj.get_empty", async () => { const b = await os.getBlob("empty"); return b ? { len: b.length } : null; });
await step("obj.list", async () => (await os.list()).map((i) => ({ name: i.name, size: i.size, chunks: i.chunks, digest: i.digest })).sort((a, b) => a.name.localeCompare(b.name)));
await step("obj.status", async () => { const s = await os.status(); return { size: s.size, sealed: s.sealed, messages: s.streamInfo.state.messages, subjects: s.streamInfo.state.num_subjects }; });
await step("obj.link", async () => {
  const target = await os.info("small.txt");
  const l = await os.link("small-link", target);
  const b = await os.getBlob("small-link");
  return { link: l, via_link: b ? td.decode(b) : null };
});
await step("obj.update_meta", async () => { const pa = await os.update("small.txt", { description: "renamed later" }); return { ok: !!pa, info: await os.info("small.txt") }; });
await step("obj.watch_initial", async () => {
  const it = await os.watch();
  const r = [];
  const t = setTimeout(() => it.stop(), 1500);
  for await (const e of it) { r.push(e === null ? "<null: end of initial values>" : { name: e.name, deleted: e.deleted, isUpdate: e.isUpdate, size: e.size, revision: e.revision }); if (r.length >= 5) break; }
  clearTimeout(t); it.stop();
  return r;
});
await step("obj.delete", async () => await os.delete("blob.bin"));
await step("obj.info_deleted", async () => await os.info("blob.bin"));
await step("obj.get_deleted", async () => await os.get("blob.bin"));
await step("obj.list_after_delete", async () => (await os.list()).map((i) => i.name).sort());
await step("obj.status_after_delete", async () => { const s = await os.status(); return { size: s.size, messages: s.streamInfo.state.messages }; });
await step("obj.get_missing", async () => await os.get("never"));
await step("obj.seal", async () => { const s = await os.seal(); return { sealed: s.sealed }; });
await step("obj.put_after_seal", async () => await os.putBlob({ name: "late" }, te.encode("late")));
await step("obj.destroy", async () => await os.destroy());

// ============================================================ 2.11/2.12 stream features
await step("v211.msg_ttl", async () => {
  await jsm.streams.add({ name: "TTL", subjects: ["ttl.>"], allow_msg_ttl: true });
  const pa = await js.publish("ttl.x", "short", { ttl: "1s" });
  const pb = await js.publish("ttl.y", "forever");
  const m = await jsm.streams.getMessage("TTL", { seq: pa.seq });
  await sleep(1700);
  const st = (await jsm.streams.info("TTL")).state;
  const gone = await jsm.streams.getMessage("TTL", { seq: pa.seq });
  await jsm.streams.delete("TTL");
  return { pa, pb, stored: stored(m), after: { messages: st.messages, first_seq: st.first_seq, last_seq: st.last_seq }, gone: stored(gone) };
});
await step("v211.msg_ttl_not_allowed", async () => {
  await jsm.streams.add({ name: "NOTTL", subjects: ["nottl.>"] });
  try { return await js.publish("nottl.x", "x", { ttl: "1s" }); } finally { await jsm.streams.delete("NOTTL"); }
});
await step("v211.kv_ttls", async () => {
  const age = await kvm.create("agekv", { ttl: 1000 });
  const mk = await kvm.create("markkv", { markerTTL: 1000 });
  const cfg = (await mk.status()).streamInfo.config;
  const r = { markkv_config: { allow_msg_ttl: cfg.allow_msg_ttl, subject_delete_marker_ttl: cfg.subject_delete_marker_ttl, max_age: cfg.max_age }, agekv_max_age: (await age.status()).streamInfo.config.max_age };
  await age.put("k", "v");
  r.key_ttl_create = await mk.create("k", "v", "1s");
  r.plain = await mk.put("p", "v");
  await sleep(1700);
  const e1 = await age.get("k");
  const e2 = await mk.get("k");
  r.age_after = e1 && { op: e1.operation, rev: e1.revision };
  r.key_ttl_after = e2 && { op: e2.operation, rev: e2.revision, value: e2.string() };
  r.markkv_keys = []; for await (const k of await mk.keys()) r.markkv_keys.push(k);
  r.markkv_keys.sort();
  await age.destroy(); await mk.destroy();
  return r;
});
await step("v212.atomic_batch", async () => {
  await jsm.streams.add({ name: "ATOM", subjects: ["atom.>"], allow_atomic: true });
  try {
    const b = await js.startBatch("atom.a", "1");
    b.add("atom.b", "2");
    await b.add("atom.c", "3", { ack: true });
    const ack = await b.commit("atom.d", "4");
    const st = (await jsm.streams.info("ATOM")).state;
    return { ack: { ...ack, batch: ack.batch ? "<id>" : ack.batch }, count: b.count, messages: st.messages };
  } finally { await jsm.streams.delete("ATOM"); }
});
await step("v212.atomic_batch_not_allowed", async () => {
  await jsm.streams.add({ name: "NOATOM", subjects: ["noatom.>"] });
  try {
    const b = await js.startBatch("noatom.a", "1");
    const ack = await b.commit("noatom.b", "2");
    return ack;
  } finally { await jsm.streams.delete("NOATOM"); }
});

await step("final.account_info", async () => {
  const a = await jsm.getAccountInfo();
  return { streams: a.streams, consumers: a.consumers };
});
await step("final.stream_names", async () => (await collect(jsm.streams.names())).sort());

const closed = nc.closed();
await nc.close();
const closeErr = await closed;
emit("close", closeErr ? errInfo(closeErr) : "clean");
process.stderr.write(`done in ${Date.now() - t0} ms, ${out.length} steps\n`);
process.exit(0);
