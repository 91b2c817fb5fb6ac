// nats.js (v3) over WebSocket: wsconnect (from @nats-io/nats-core, which
// @nats-io/transport-node brings) against a server's websocket port, with a
// plain TCP connection beside it. Prints one "step<TAB>json" line per step;
// tests/test_websocket_js.py runs it against natslab and nats-server and
// compares. Node 20 needs --experimental-websocket for the global WebSocket.
//
//   node --experimental-websocket ws.mjs ws://127.0.0.1:8080 nats://127.0.0.1:4222
import { wsconnect, headers as mkHeaders } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager, jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";

const [wsUrl, tcpUrl] = process.argv.slice(2);

function emit(step, value) {
  process.stdout.write(`${step}\t${JSON.stringify(value)}\n`);
}

async function step(name, fn) {
  let timer;
  try {
    const late = new Promise((_, no) => { timer = setTimeout(() => no(new Error("timeout")), 10000); });
    emit(name, await Promise.race([fn(), late]));
  } catch (e) {
    emit(name, { error: { name: e.name, message: e.message, code: e.code } });
  } finally {
    clearTimeout(timer);
  }
}

const ws = await wsconnect({ servers: wsUrl, maxReconnectAttempts: 0 });
const tcp = await connect({ servers: tcpUrl, maxReconnectAttempts: 0 });
const info = ws.info;
emit("info", { proto: info.proto, headers: info.headers, jetstream: info.jetstream, max_payload: info.max_payload,
               tls_required: info.tls_required ?? null });

await step("tcp-to-ws", async () => {
  const sub = ws.subscribe("js.ws.in", { max: 1 });
  await ws.flush();
  const h = mkHeaders();
  h.set("X-Step", "1");
  tcp.publish("js.ws.in", "hello from tcp", { headers: h });
  for await (const m of sub) return { data: m.string(), hdr: m.headers?.get("X-Step") ?? null };
});

await step("ws-to-tcp-big", async () => {
  const sub = tcp.subscribe("js.ws.big", { max: 1 });
  await tcp.flush();
  const big = new Uint8Array(150 * 1024).map((_, i) => i % 251);
  ws.publish("js.ws.big", big);
  for await (const m of sub) {
    let sum = 0;
    for (const b of m.data) sum = (sum + b) % 1000003;
    return { len: m.data.length, sum };
  }
});

await step("request", async () => {
  const sub = tcp.subscribe("js.ws.svc");
  (async () => { for await (const m of sub) m.respond(m.string().toUpperCase()); })();
  await tcp.flush();
  const r = await ws.request("js.ws.svc", "ping", { timeout: 3000 });
  return r.string();
});

await step("no-responders", async () => {
  try {
    await ws.request("js.ws.nobody", "x", { timeout: 3000 });
    return "answered";
  } catch (e) {
    return e.name;
  }
});

await step("kv", async () => {
  const jsm = await jetstreamManager(ws);
  const kvm = new Kvm(jetstream(ws));
  const kv = await kvm.create("wsbucket");
  await kv.put("k", "v1");
  await kv.put("k", "v2");
  const e = await kv.get("k");
  const si = await jsm.streams.info("KV_wsbucket");
  return { value: e.string(), revision: e.revision, msgs: si.state.messages };
});

await step("drain", async () => {
  await ws.drain();
  await tcp.drain();
  return "ok";
});
