/**
 * Section (m): from a peer's model becoming ready to the routing table knowing it. qm B serves
 * `bench-known` from a demo upstream that loads for a while (`--load-delay-ms`); two qm boxes
 * have B as a `kind = "qm"` peer: one follows B's `/api/events`, the other reaches B through a
 * proxy in this process that answers 404 to `/api/events` (everything else is passed on), so it
 * polls B's `/api/status` every `poll_s`. Each run loads the model on B (`POST
 * /api/models/ID/load`) and notes, on this process's clock, when B's own `/api/events` says
 * `event: model` … `ready` and when each box's `/api/events` says `event: peer` with B's model
 * ready (the table's news of a change of a peer's models); then it unloads the model on B and
 * waits until both boxes saw it go. The figure is the box's instant minus B's.
 */

import { type EventFollower, followEvents, peerEventState, startA, startB } from "./peers.ts";
import { modelStatus, type Qm, unload } from "./qm.ts";
import { epochMs, log, percentile, rng, round } from "./util.ts";

const MODEL = "bench-known";

export interface PeerKnownSetup {
  dir: string;
  runs: number;
  /** How long B's upstream takes to load, ms. */
  loadDelayMs: number;
  /** The polling box's `poll_s`. */
  pollS: number;
}

/** A stand-in for B without events: `/api/events` is a 404, the rest goes to B. */
function withoutEvents(target: string) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const u = new URL(req.url);
      if (u.pathname === "/api/events") return new Response("not found", { status: 404 });
      return fetch(target + u.pathname + u.search, {
        method: req.method,
        headers: req.headers,
        body: req.body,
      });
    },
  });
}

const peerIs = (state: string) => (event: string, data: unknown) =>
  event === "peer" && peerEventState(data, MODEL) === state;

async function settled(boxes: EventFollower[], state: string): Promise<number[]> {
  // A dist/qm built before the table told of model changes never sends this event.
  const what = `event: peer with ${MODEL} ${state} (is dist/qm current? bun run build)`;
  return Promise.all(boxes.map((f) => f.next(peerIs(state), what)));
}

export async function peerKnownRuns(s: PeerKnownSetup) {
  const b = await startB(s.dir, "qm-known-b", MODEL, `--load-delay-ms ${s.loadDelayMs}`);
  const proxy = withoutEvents(b.url);
  const followers: EventFollower[] = [];
  try {
    const events: Qm = await startA(s.dir, "qm-known-events", b.url);
    const polled: Qm = await startA(
      s.dir,
      "qm-known-poll",
      `http://127.0.0.1:${proxy.port}`,
      s.pollS,
    );
    const fromB = await followEvents(b.url);
    const fromEvents = await followEvents(events.url);
    const fromPolled = await followEvents(polled.url);
    followers.push(fromB, fromEvents, fromPolled);
    const known: number[] = [];
    const knownPoll: number[] = [];
    const loadMs: number[] = [];
    // The polling box saw the last unload on one of its polls: without a wait of its own, every
    // load would start at the same phase of the poll and measure one point of it.
    const phase = rng(11);
    for (let i = 0; i < s.runs; i++) {
      const bReady = fromB.next(
        (event, data) =>
          event === "model" &&
          (data as { model?: unknown }).model === MODEL &&
          (data as { state?: unknown }).state === "ready",
        `event: model with ${MODEL} ready`,
      );
      const seen = settled([fromEvents, fromPolled], "ready");
      const t0 = epochMs();
      const res = await fetch(`${b.url}/api/models/${MODEL}/load`, { method: "POST" });
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`loading ${MODEL} on B: HTTP ${res.status}`);
      // The new upstream's process group, for cleanup.
      await modelStatus(b, MODEL);
      const tb = await bReady;
      const [te, tp] = (await seen) as [number, number];
      loadMs.push(round(tb - t0, 1));
      known.push(round(te - tb));
      knownPoll.push(round(tp - tb, 1));
      log(
        `peer known run ${i + 1}: events ${known.at(-1)} ms, polled ${knownPoll.at(-1)} ms ` +
          `(B loaded in ${loadMs.at(-1)} ms)`,
      );
      const gone = settled([fromEvents, fromPolled], "offered");
      await unload(b, MODEL);
      await gone;
      await Bun.sleep(phase() * s.pollS * 1000);
    }
    return {
      runs: s.runs,
      load_delay_ms: s.loadDelayMs,
      poll_s: s.pollS,
      peer_known_ms_p50: round(percentile(known, 50)),
      peer_known_ms_p99: round(percentile(known, 99)),
      peer_known_poll_ms_p50: round(percentile(knownPoll, 50), 1),
      peer_known_poll_ms_p99: round(percentile(knownPoll, 99), 1),
      peer_known_ms_runs: known,
      peer_known_poll_ms_runs: knownPoll,
      b_load_ms_runs: loadMs,
      method:
        `${s.runs} loads of ${MODEL} on qm B (demo upstream, --load-delay-ms ${s.loadDelayMs}), ` +
        "unloaded between, then a wait drawn from 0 … poll_s (seeded) so the loads fall at " +
        "every phase of the poll; known = when this process read a box's event: peer with B's model " +
        "ready − when it read B's own event: model … ready (one clock); events: the box follows " +
        `B's /api/events; poll: B's /api/events is a 404 (a proxy), the box polls /api/status ` +
        `every poll_s = ${s.pollS}`,
    };
  } finally {
    for (const f of followers) f.close();
    proxy.stop(true);
  }
}
