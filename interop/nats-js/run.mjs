// Starts a fresh nats-server and a fresh natslab server (each with its own
// empty store dir on 127.0.0.1), runs check.mjs against each one in turn,
// writes both transcripts and prints a step-by-step diff.
//
//   node run.mjs [outdir]        (default outdir: ./out)
//
// NATS_SERVER   command for the reference server   (default: "nats-server")
// NATSLAB_SERVER command for natslab's server      (default: "python3 -m natslab.server")
// Exit status: 0 when the transcripts are identical, 1 when they differ.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { createServer, connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = process.argv[2] ?? join(here, "out");
mkdirSync(outdir, { recursive: true });

const SERVERS = [
  { label: "nats-server", cmd: process.env.NATS_SERVER ?? "nats-server" },
  { label: "natslab", cmd: process.env.NATSLAB_SERVER ?? "python3 -m natslab.server" },
];

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => res(port)); });
  });
}

async function waitPort(port, ms = 20000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const ok = await new Promise((res) => {
      const c = tcpConnect({ host: "127.0.0.1", port }, () => { c.end(); res(true); });
      c.once("error", () => res(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`port ${port} not listening after ${ms}ms`);
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const t = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(t);
}

function runCheck(url) {
  return new Promise((res) => {
    const p = spawn(process.execPath, [join(here, "check.mjs"), url], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    const killer = setTimeout(() => p.kill("SIGKILL"), 300_000);
    p.on("exit", (code) => { clearTimeout(killer); res({ out, err, code }); });
  });
}

const results = {};
for (const srv of SERVERS) {
  const store = mkdtempSync(join(tmpdir(), `natsjs-${srv.label}-`));
  const port = await freePort();
  const [exe, ...args] = srv.cmd.split(/\s+/);
  const child = spawn(exe, [...args, "-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  try {
    await waitPort(port);
    process.stderr.write(`${srv.label}: running check against nats://127.0.0.1:${port}\n`);
    const r = await runCheck(`nats://127.0.0.1:${port}`);
    results[srv.label] = r.out;
    writeFileSync(join(outdir, `${srv.label}.txt`), r.out);
    process.stderr.write(`${srv.label}: ${r.err.trim()} (exit ${r.code})\n`);
  } catch (e) {
    process.stderr.write(`${srv.label}: ${e.message}\n`);
    results[srv.label] = "";
  } finally {
    await stop(child);
    writeFileSync(join(outdir, `${srv.label}.log`), log);
    rmSync(store, { recursive: true, force: true });
  }
}

// step-keyed diff (steps are unique, so compare by name)
const parse = (t) => new Map(t.split("\n").filter(Boolean).map((l) => { const i = l.indexOf("\t"); return [l.slice(0, i), l.slice(i + 1)]; }));
const a = parse(results["nats-server"]);
const b = parse(results["natslab"]);
const names = [...new Set([...a.keys(), ...b.keys()])];
let diffs = 0;
const report = [];
for (const n of names) {
  const x = a.get(n), y = b.get(n);
  if (x === y) continue;
  diffs++;
  report.push(`## ${n}\n  nats-server: ${x ?? "<missing>"}\n  natslab:     ${y ?? "<missing>"}`);
}
report.push(`\n${diffs} of ${names.length} steps differ`);
writeFileSync(join(outdir, "diff.txt"), report.join("\n") + "\n");
process.stdout.write(report.join("\n") + "\n");
process.exit(diffs ? 1 : 0);
