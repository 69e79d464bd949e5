/**
 * Peers suite: one qm per hostile peer (scripts/harden/hostile-peer.ts, a process of its own),
 * configured as a `kind = "qm"` peer polled every second, while a client chats with a local
 * demo model for the whole run. Per peer: qm's peak RSS (VmRSS of the qm pid, sampled every
 * 100 ms) and the local chats' p99 latency, plus what must never happen: a redirect followed
 * (any request reaching the host the peer redirects to) and more than 1 000 of a peer's models
 * listed.
 */
import { join } from "node:path";
import type { Subprocess } from "bun";
import { log, percentile, round, rssMb } from "../bench/util.ts";
import { HOSTILE_KINDS, type HostileKind } from "./hostile-peer.ts";
import { configToml, demoCmd, load, type Qm } from "./qm.ts";

export interface PeerFigures {
  peer: HostileKind;
  /** qm's peak resident memory during the run, MB. */
  rss_max_mb: number;
  /** The local chats' 99th percentile latency, ms. */
  chat_p99_ms: number;
  chats: number;
  /** Local chats that did not answer 200 with the demo's text. */
  chat_failed: number;
  /** Requests that reached the host a peer redirected to (must be 0). */
  redirects_followed: number;
  /** The most of the peer's models qm listed at once in `/v1/models` (at most 1 000). */
  peer_models_listed: number;
  /** What qm's status said of the peer at the end. */
  peer_state: string;
  last_error: string | null;
}

export const PEER_TARGETS = { rssMb: 200, p99Ms: 100, peerModels: 1000 };

const LOCAL = "p-ok";

/**
 * One local model and the hostile peer; the redirecting one lists a model (`evil/m`), so that a
 * request for it goes there and meets the redirect.
 */
export function peersConfig(stateDir: string, peerUrl: string, listed: boolean): string {
  return configToml({
    stateDir,
    server: `preload = ["${LOCAL}"]`,
    body: `[models.${LOCAL}]
cmd = ${JSON.stringify(demoCmd(LOCAL, "--tokens 4 --token-ms 0"))}

[peers.evil]
url = "${peerUrl}"
kind = "qm"
models = ${listed ? '["m"]' : "[]"}
poll_s = 1
timeout_s = 2
`,
  });
}

/** Starts a hostile peer; resolves with its URL, the host it redirects to, and the process. */
async function startPeer(
  kind: HostileKind,
): Promise<{ url: string; elsewhere: string; proc: Subprocess<"ignore", "pipe", "inherit"> }> {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "hostile-peer.ts"), kind], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = proc.stdout.getReader();
  let text = "";
  const deadline = Date.now() + 10_000;
  while (!/elsewhere on \S+\n/.test(text)) {
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`hostile peer ${kind} did not start: ${text}`);
    }
    const { done, value } = await reader.read();
    if (done) throw new Error(`hostile peer ${kind} exited: ${text}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  void proc.stdout.cancel().catch(() => {});
  return {
    url: /listening on (\S+)/.exec(text)![1]!,
    elsewhere: /elsewhere on (\S+)/.exec(text)![1]!,
    proc,
  };
}

/** Runs one hostile peer against a fresh qm (`withQm` starts and stops it) for `seconds`. */
async function onePeer(
  kind: HostileKind,
  seconds: number,
  withQm: (name: string, toml: string, fn: (qm: Qm) => Promise<void>) => Promise<void>,
  dir: string,
): Promise<PeerFigures> {
  const peer = await startPeer(kind);
  const figures: PeerFigures = {
    peer: kind,
    rss_max_mb: 0,
    chat_p99_ms: Number.NaN,
    chats: 0,
    chat_failed: 0,
    redirects_followed: 0,
    peer_models_listed: 0,
    peer_state: "?",
    last_error: null,
  };
  try {
    await withQm(
      `peer-${kind}`,
      peersConfig(join(dir, `state-peer-${kind}`), peer.url, kind === "redirect"),
      async (qm) => {
        if ((await load(qm, LOCAL)) === null) throw new Error(`${LOCAL} did not load`);
        const until = Date.now() + seconds * 1000;
        const sampler = setInterval(() => {
          figures.rss_max_mb = Math.max(figures.rss_max_mb, rssMb(qm.pid) ?? 0);
        }, 100);
        const lister = (async () => {
          while (Date.now() < until) {
            const res = await fetch(`${qm.url}/v1/models`).catch(() => null);
            const body = (await res?.json().catch(() => null)) as {
              data?: { id: string }[];
            } | null;
            const listed = (body?.data ?? []).filter((m) => m.id.startsWith("evil/")).length;
            figures.peer_models_listed = Math.max(figures.peer_models_listed, listed);
            // Now and then, a request for the peer's model: a redirect must fail it, not be followed.
            await fetch(`${qm.url}/v1/chat/completions`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({
                model: "evil/m",
                messages: [{ role: "user", content: "hi" }],
              }),
              signal: AbortSignal.timeout(5000),
            })
              .then((r) => r.arrayBuffer())
              .catch(() => {});
            await Bun.sleep(1000);
          }
        })();
        const latencies: number[] = [];
        const chat = JSON.stringify({
          model: LOCAL,
          max_tokens: 4,
          messages: [{ role: "user", content: "hi" }],
        });
        while (Date.now() < until) {
          const t0 = performance.now();
          const res = await fetch(`${qm.url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: chat,
            signal: AbortSignal.timeout(10_000),
          }).catch(() => null);
          const ok = res?.status === 200 && (await res.text().catch(() => "")).includes("choices");
          latencies.push(performance.now() - t0);
          if (!ok) figures.chat_failed++;
        }
        clearInterval(sampler);
        await lister;
        figures.chats = latencies.length;
        figures.chat_p99_ms = round(percentile(latencies, 99), 1);
        figures.rss_max_mb = round(figures.rss_max_mb, 1);
        const status = (await (await fetch(`${qm.url}/api/status`)).json()) as {
          peers?: { name: string; state: string; last_error: string | null }[];
        };
        const evil = status.peers?.find((p) => p.name === "evil");
        figures.peer_state = evil?.state ?? "?";
        figures.last_error = evil?.last_error ?? null;
      },
    );
    const hits = (await (await fetch(`${peer.elsewhere}/hits`)).json()) as { hits: number };
    figures.redirects_followed = hits.hits;
  } finally {
    peer.proc.kill("SIGKILL");
    await peer.proc.exited;
  }
  return figures;
}

/** Every hostile peer in turn, `seconds` each; stops early (with what it has) past `deadline`. */
export async function peersSuite(
  seconds: number,
  deadline: number,
  withQm: (name: string, toml: string, fn: (qm: Qm) => Promise<void>) => Promise<void>,
  dir: string,
): Promise<PeerFigures[]> {
  const out: PeerFigures[] = [];
  for (const kind of HOSTILE_KINDS) {
    const left = (deadline - Date.now()) / 1000;
    if (left < seconds + 5) {
      log(`peers: no time left for ${kind}`);
      break;
    }
    const f = await onePeer(kind, seconds, withQm, dir);
    log(
      `peers: ${kind}: rss max ${f.rss_max_mb} MB, chat p99 ${f.chat_p99_ms} ms over ${f.chats} chats (${f.chat_failed} failed), redirects followed ${f.redirects_followed}, peer models listed ${f.peer_models_listed}, peer ${f.peer_state}: ${f.last_error ?? "-"}`,
    );
    out.push(f);
  }
  return out;
}

/** Whether one peer's figures meet the targets. */
export function peerMet(f: PeerFigures): boolean {
  return (
    f.rss_max_mb < PEER_TARGETS.rssMb &&
    f.chat_p99_ms < PEER_TARGETS.p99Ms &&
    f.chat_failed === 0 &&
    f.redirects_followed === 0 &&
    f.peer_models_listed <= PEER_TARGETS.peerModels
  );
}
