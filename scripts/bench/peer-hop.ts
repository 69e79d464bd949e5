/**
 * Section (l): the latency one peer hop adds. qm B serves model `bench-peer` from a
 * `qm demo-upstream` answering at once (16 tokens, as section (a)); qm A has B as a
 * `kind = "qm"` peer and no model of its own, so A routes the bare name to B. The same client
 * sends chat requests, whole and streamed, to A (client → A → B → upstream) and to B
 * (client → B → upstream) in alternating rounds (the order flips every round) at 1 and at 8
 * clients, after a warm-up of each that is discarded. Every round gives a median per side;
 * the added latency is the median over rounds of (A's median − B's median), and p99 is the
 * pooled p99 of A minus that of B. Streamed requests also give the time to the first `data:`
 * event (TTFT), compared the same way.
 */

import { startA, startB, untilPeerModel } from "./peers.ts";
import { load, type Qm } from "./qm.ts";
import { log, othersCpu, percentile, round } from "./util.ts";

const MODEL = "bench-peer";
const PATH = "/v1/chat/completions";
const HEADERS = { "content-type": "application/json" };

export interface PeerHopSetup {
  dir: string;
  /** Every other process of the benchmark, for the "others" CPU figure. */
  ours: () => number[];
  warmupMs: number;
  roundMs: number;
  rounds: number;
}

type Side = "hop" | "direct";
const SIDES: readonly Side[] = ["hop", "direct"];

interface Sample {
  total: number;
  ttft: number;
}

/** One request: send → last byte (and, streamed, → the read that completed the first event). */
async function once(url: string, body: string, stream: boolean): Promise<Sample | null> {
  const t0 = performance.now();
  const res = await fetch(url, { method: "POST", headers: HEADERS, body });
  if (!stream || !res.body) {
    await res.arrayBuffer();
    const t = performance.now() - t0;
    return res.status === 200 ? { total: t, ttft: t } : null;
  }
  let ttft = Number.NaN;
  let text = "";
  const decoder = new TextDecoder();
  for await (const bytes of res.body) {
    if (Number.isNaN(ttft)) {
      text += decoder.decode(bytes, { stream: true });
      if (text.includes("data: ")) ttft = performance.now() - t0;
    }
  }
  const total = performance.now() - t0;
  return res.status === 200 && !Number.isNaN(ttft) ? { total, ttft } : null;
}

/** `clients` closed-loop clients for `ms`. */
async function loop(url: string, body: string, stream: boolean, clients: number, ms: number) {
  const out: Sample[] = [];
  let errors = 0;
  const end = performance.now() + ms;
  const client = async () => {
    while (performance.now() < end) {
      const s = await once(url, body, stream).catch(() => null);
      if (s) out.push(s);
      else errors++;
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return { samples: out, errors };
}

const median = (xs: number[]) => percentile(xs, 50);

async function cell(
  s: PeerHopSetup,
  urls: Record<Side, string>,
  stream: boolean,
  clients: number,
  ours: () => number[],
) {
  const body = JSON.stringify({
    model: MODEL,
    messages: [{ role: "user", content: "hello" }],
    max_tokens: 16,
    stream,
  });
  for (const side of SIDES) await loop(urls[side], body, stream, clients, s.warmupMs);
  const pooled = { hop: [] as Sample[], direct: [] as Sample[] };
  const added: number[] = [];
  const addedTtft: number[] = [];
  let errors = 0;
  const others: number[] = [];
  for (let r = 0; r < s.rounds; r++) {
    const order = r % 2 === 0 ? SIDES : [...SIDES].reverse();
    const med = {} as Record<Side, { total: number; ttft: number }>;
    const busy = othersCpu(ours);
    for (const side of order) {
      const got = await loop(urls[side], body, stream, clients, s.roundMs);
      errors += got.errors;
      for (const x of got.samples) pooled[side].push(x);
      med[side] = {
        total: median(got.samples.map((x) => x.total)),
        ttft: median(got.samples.map((x) => x.ttft)),
      };
    }
    others.push(busy());
    added.push(round(med.hop.total - med.direct.total));
    if (stream) addedTtft.push(round(med.hop.ttft - med.direct.ttft));
  }
  const pct = (side: Side, key: keyof Sample, p: number) =>
    percentile(
      pooled[side].map((x) => x[key]),
      p,
    );
  const out = {
    clients,
    stream,
    requests: { hop: pooled.hop.length, direct: pooled.direct.length },
    errors,
    hop_ms_p50: round(pct("hop", "total", 50)),
    hop_ms_p99: round(pct("hop", "total", 99)),
    direct_ms_p50: round(pct("direct", "total", 50)),
    direct_ms_p99: round(pct("direct", "total", 99)),
    added_ms_p50: round(median(added)),
    added_ms_p99: round(pct("hop", "total", 99) - pct("direct", "total", 99)),
    added_ms_by_round: added,
    ...(stream
      ? {
          ttft_hop_ms_p50: round(pct("hop", "ttft", 50)),
          ttft_direct_ms_p50: round(pct("direct", "ttft", 50)),
          ttft_added_ms_p50: round(median(addedTtft)),
          ttft_added_ms_by_round: addedTtft,
        }
      : {}),
    others_cpu_pct: round(others.reduce((x, y) => x + y, 0) / others.length, 1),
  };
  log(
    `peer hop ${stream ? "streamed" : "whole"} c${clients}: added p50 ${out.added_ms_p50} ms ` +
      `(hop ${out.hop_ms_p50}, direct ${out.direct_ms_p50}), p99 ${out.added_ms_p99} ms`,
  );
  return out;
}

export async function peerHopRuns(s: PeerHopSetup) {
  const b = await startB(s.dir, "qm-peer-b", MODEL);
  const upstream = await load(b, MODEL);
  const a: Qm = await startA(s.dir, "qm-peer-a", b.url);
  // A routes only once it has discovered the model, ready, on B.
  await untilPeerModel(a, MODEL, "ready");
  const check = await fetch(a.url + PATH, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
  });
  await check.arrayBuffer();
  if (check.status !== 200 || check.headers.get("x-qm-peer") !== "b") {
    throw new Error(`A did not route ${MODEL} to peer b (HTTP ${check.status})`);
  }
  const urls: Record<Side, string> = { hop: a.url + PATH, direct: b.url + PATH };
  const ours = () => [...s.ours(), a.pid, b.pid, upstream.pid];
  const whole1 = await cell(s, urls, false, 1, ours);
  const stream1 = await cell(s, urls, true, 1, ours);
  const whole8 = await cell(s, urls, false, 8, ours);
  const stream8 = await cell(s, urls, true, 8, ours);
  return {
    peer_hop_added_ms_p50: whole1.added_ms_p50,
    peer_hop_added_ms_p99: whole1.added_ms_p99,
    peer_hop_stream_ttft_added_ms_p50: stream1.ttft_added_ms_p50 as number,
    whole_c1: whole1,
    stream_c1: stream1,
    whole_c8: whole8,
    stream_c8: stream8,
    method:
      `client → A → B → upstream (hop) against client → B → upstream (direct); A has B as a ` +
      `kind = "qm" peer and has discovered ${MODEL} ready; demo upstream answering at once, ` +
      `16 tokens; ${s.warmupMs} ms warm-up per side, then ${s.rounds} rounds of ${s.roundMs} ms ` +
      "per side, the order flipped every round; added p50 = median over rounds of (hop median − " +
      "direct median), added p99 = pooled hop p99 − pooled direct p99; TTFT = send → the read " +
      "that completed the first data: event; the headline figures are at 1 client",
  };
}
