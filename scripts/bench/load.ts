/**
 * The load generator (in the benchmark's own Bun process). Bun's `fetch` keeps connections
 * alive and pools them per host, so each of N concurrent clients reuses its socket.
 */
import { epochMs, percentile, round } from "./util.ts";

export interface LoopResult {
  /** Send → last byte of the body, ms, of every 200 response. */
  latencies: number[];
  errors: number;
  seconds: number;
}

const JSON_HEADERS = { "content-type": "application/json" };

/**
 * Closed loop: `concurrency` clients each send the next request as soon as the previous
 * response body is fully read, for `durationMs`.
 */
export async function closedLoop(
  url: string,
  body: string,
  concurrency: number,
  durationMs: number,
): Promise<LoopResult> {
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const end = start + durationMs;
  const client = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        const res = await fetch(url, { method: "POST", headers: JSON_HEADERS, body });
        await res.arrayBuffer();
        if (res.status === 200) latencies.push(performance.now() - t0);
        else errors++;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  return { latencies, errors, seconds: (performance.now() - start) / 1000 };
}

export interface StreamResult {
  /** Per stamped chunk: client receive time − upstream send time, ms. */
  latencies: number[];
  chunks: number;
  reads: number;
  /** Reads that held more than one stamped chunk though the upstream sent them apart. */
  coalescedReads: number;
  /** Streams that failed or ended without `[DONE]`, or with fewer chunks than expected. */
  badStreams: number;
}

const STAMP = '"sent_ms":';

/**
 * `streams` concurrent streaming requests; every stamped chunk's one-way latency is the
 * receive time of the read that completed it minus the send time the upstream put in it.
 * `stamps` finds those send times in a run of complete events; a stream counts as bad when it
 * fails, misses `end`, or carries other than `expected` stamps.
 */
export async function stampedStreams(o: {
  url: string;
  init: RequestInit;
  streams: number;
  expected: number;
  end: string;
  stamps: (complete: string) => number[];
  /** What ends one event: SSE's blank line (the default), or "\n" for NDJSON lines. */
  separator?: string;
}): Promise<StreamResult> {
  const sep = o.separator ?? "\n\n";
  const out: StreamResult = {
    latencies: [],
    chunks: 0,
    reads: 0,
    coalescedReads: 0,
    badStreams: 0,
  };
  const one = async () => {
    let seen = 0;
    let done = false;
    try {
      const res = await fetch(o.url, o.init);
      if (res.status !== 200 || !res.body) throw new Error(`HTTP ${res.status}`);
      const decoder = new TextDecoder();
      let pending = "";
      for await (const bytes of res.body) {
        const at = epochMs();
        out.reads++;
        pending += decoder.decode(bytes, { stream: true });
        // Complete events end with a blank line (WHATWG SSE); a partial one waits for more.
        const cut = pending.lastIndexOf(sep);
        if (cut < 0) continue;
        const complete = pending.slice(0, cut);
        pending = pending.slice(cut + sep.length);
        const sent = o.stamps(complete);
        for (const t of sent) out.latencies.push(at - t);
        if (sent.length > 1) out.coalescedReads++;
        seen += sent.length;
        if (complete.includes(o.end)) done = true;
      }
    } catch {
      // counted below
    }
    out.chunks += seen;
    if (!done || seen !== o.expected) out.badStreams++;
  };
  await Promise.all(Array.from({ length: o.streams }, one));
  return out;
}

/** The OpenAI chat streams of the stamp upstream: `"sent_ms":<epoch ms>` in every chunk. */
function sentMs(complete: string): number[] {
  const out: number[] = [];
  for (let i = complete.indexOf(STAMP); i >= 0; i = complete.indexOf(STAMP, i + 1)) {
    const from = i + STAMP.length;
    out.push(Number.parseFloat(complete.slice(from, from + 24)));
  }
  return out;
}

export function streamLoad(
  url: string,
  model: string,
  streams: number,
  tokens: number,
): Promise<StreamResult> {
  const body = JSON.stringify({
    model,
    stream: true,
    max_tokens: tokens,
    messages: [{ role: "user", content: "stream please" }],
  });
  return stampedStreams({
    url,
    init: { method: "POST", headers: JSON_HEADERS, body },
    streams,
    // One stamped chunk per token plus the final one carrying finish_reason.
    expected: tokens + 1,
    end: "data: [DONE]",
    stamps: sentMs,
  });
}

/**
 * Checks that the upstream's clock and ours agree: its reading must fall between our send and
 * receive times. Returns the worst disagreement seen (0 = consistent) and the median offset.
 */
export async function clockCheck(
  clockUrl: string,
  rounds = 20,
): Promise<{ offset_ms: number; violation_ms: number }> {
  const offsets: number[] = [];
  let violation = 0;
  for (let i = 0; i < rounds; i++) {
    const t0 = epochMs();
    const theirs = Number(await (await fetch(clockUrl)).text());
    const t1 = epochMs();
    offsets.push(theirs - (t0 + t1) / 2);
    violation = Math.max(violation, t0 - theirs, theirs - t1);
  }
  return { offset_ms: round(percentile(offsets, 50)), violation_ms: round(Math.max(0, violation)) };
}
