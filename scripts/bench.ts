/**
 * `bun run bench`: qm's forwarding overhead, measured side by side in one run on loopback.
 * Prints one JSON report on stdout; progress goes to stderr. Every process started here is
 * stopped however the run ends (scripts/bench/procs.ts).
 *
 * (a) Non-streamed latency/throughput at 1 and 32 clients, against the same `qm demo-upstream`
 *     process three ways: directly, through a bare Bun.serve+fetch forwarder (the floor for any
 *     Bun proxy here) and through qm. Each cell: warm-up, then a fixed duration, closed loop.
 * (b) 100 concurrent streams of 500 tokens from the stamp upstream. Each chunk carries the epoch
 *     ms at which the upstream wrote it, so "added latency" is measured per chunk as client
 *     receive time − upstream send time (one machine clock, checked by a round-trip bracket).
 *     The same streams straight to the upstream give the floor (kernel + client scheduling).
 *     A client read holding two stamped chunks means they were coalesced on the way.
 * (c) Readiness gap: the stamp upstream records when its simulated load ended and when its
 *     /health first answered 200; the client records when the first byte of the response to
 *     the request that was waiting for the load arrived. Repeated with an unload in between.
 * (d) qm's own RSS (VmRSS of the qm pid, not its children): idle just after start with no model
 *     loaded, and peak sampled every 25 ms during (b) through qm.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { type Cell, clockCheck, closedLoop, type StreamResult, streamLoad } from "./bench/load.ts";
import { startListening, withCleanup } from "./bench/procs.ts";
import { ensureBuilt, load, MODELS, modelStatus, type Qm, startQm, unload } from "./bench/qm.ts";
import { cpuMs, epochMs, log, percentile, round, rssMb } from "./bench/util.ts";

const WARMUP_MS = 1000;
const CELL_MS = 4000;
const STREAMS = 100;
const TOKENS = 500;
const TOKEN_MS = 10;
const LOAD_DELAY_MS = 250;
const READINESS_RUNS = 8;

const BARE = join(import.meta.dir, "bench/bare-forwarder.ts");
const dir = mkdtempSync(join(tmpdir(), "qm-bench-"));
const readyFile = join(dir, "ready.json");

type Target = "direct" | "bare" | "qm";

interface Urls {
  direct: string;
  bare: string;
  qm: string;
}

async function nonStream(urls: Urls, pids: { bare: number; qm: number }) {
  const path = "/v1/chat/completions";
  const body = JSON.stringify({
    model: MODELS.demo,
    messages: [{ role: "user", content: "hello" }],
    max_tokens: 16,
  });
  const out: Record<string, Record<Target, Cell & { proxy_cpu_us_per_req?: number }>> = {};
  for (const c of [1, 32]) {
    const row = {} as Record<Target, Cell & { proxy_cpu_us_per_req?: number }>;
    for (const t of ["direct", "bare", "qm"] as const) {
      await closedLoop(urls[t] + path, body, c, WARMUP_MS);
      const pid = t === "direct" ? null : pids[t];
      const cpu0 = pid === null ? 0 : cpuMs(pid);
      const cell: Cell & { proxy_cpu_us_per_req?: number } = await closedLoop(
        urls[t] + path,
        body,
        c,
        CELL_MS,
      );
      // CPU the proxy process spent per request: where a slower proxy's time goes.
      if (pid !== null)
        cell.proxy_cpu_us_per_req = round(((cpuMs(pid) - cpu0) * 1000) / cell.requests, 1);
      row[t] = cell;
      log(`c${c} ${t}: p50 ${cell.p50_ms} ms, p99 ${cell.p99_ms} ms, ${cell.rps} req/s`);
    }
    out[`c${c}`] = row;
  }
  return out;
}

function streamFigures(r: StreamResult) {
  return {
    ms_p50: round(percentile(r.latencies, 50)),
    ms_p99: round(percentile(r.latencies, 99)),
    ms_max: round(Math.max(...r.latencies)),
    chunks: r.chunks,
    reads: r.reads,
    coalesced_reads: r.coalescedReads,
    bad_streams: r.badStreams,
    proxy_cpu_us_per_chunk: undefined as number | undefined,
  };
}

async function streams(urls: Urls, pids: { bare: number; qm: number }) {
  const clock = await clockCheck(`${urls.direct}/clock`);
  log(`clock check against the upstream: ${JSON.stringify(clock)}`);
  const path = "/v1/chat/completions";
  const out = {} as Record<Target, ReturnType<typeof streamFigures>>;
  let peak = 0;
  for (const t of ["direct", "bare", "qm"] as const) {
    // Warm-up with short streams so no path pays first-use costs in the measured run.
    await streamLoad(urls[t] + path, MODELS.stream, STREAMS, 20);
    const pid = t === "direct" ? null : pids[t];
    const cpu0 = pid === null ? 0 : cpuMs(pid);
    const sample = () => {
      peak = Math.max(peak, rssMb(pids.qm) ?? 0);
    };
    const sampler = t === "qm" ? setInterval(sample, 25) : null;
    const figures = streamFigures(await streamLoad(urls[t] + path, MODELS.stream, STREAMS, TOKENS));
    if (sampler) clearInterval(sampler);
    out[t] = figures;
    if (pid !== null) {
      // CPU the proxy spent per chunk relayed: the cost behind any queueing delay.
      out[t].proxy_cpu_us_per_chunk = round(((cpuMs(pid) - cpu0) * 1000) / figures.chunks, 1);
    }
    log(
      `streams ${t}: p50 ${figures.ms_p50} ms, p99 ${figures.ms_p99} ms, coalesced ${figures.coalesced_reads}`,
    );
  }
  return { ...out, clock, peakRss: peak };
}

interface Ready {
  ready_at_ms: number;
  first_200_ms: number;
}

async function readiness(qm: Qm) {
  const fromReady: number[] = [];
  const fromFirst200: number[] = [];
  const body = JSON.stringify({ model: MODELS.cold, messages: [{ role: "user", content: "hi" }] });
  for (let i = 0; i < READINESS_RUNS; i++) {
    await unload(qm, MODELS.cold);
    rmSync(readyFile, { force: true });
    const res = await fetch(`${qm.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    // fetch resolves when the response head arrived: the first bytes qm forwarded.
    const firstByte = epochMs();
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`readiness run ${i}: HTTP ${res.status}`);
    await modelStatus(qm, MODELS.cold);
    // The upstream writes the file right after answering the probe; give it a moment.
    let ready: Ready | null = null;
    for (let w = 0; w < 100 && ready === null; w++) {
      const f = Bun.file(readyFile);
      if (await f.exists()) ready = (await f.json()) as Ready;
      else await Bun.sleep(10);
    }
    if (ready === null) throw new Error(`readiness run ${i}: upstream wrote no ${readyFile}`);
    fromReady.push(firstByte - ready.ready_at_ms);
    fromFirst200.push(firstByte - ready.first_200_ms);
    log(`readiness run ${i + 1}: ${round(firstByte - ready.ready_at_ms, 2)} ms after healthy`);
  }
  return {
    p50: round(percentile(fromReady, 50), 2),
    max: round(Math.max(...fromReady), 2),
    runs: fromReady.length,
    from_first_200_probe: {
      p50: round(percentile(fromFirst200, 50), 2),
      max: round(Math.max(...fromFirst200), 2),
    },
  };
}

function target(value: number, op: "<=" | ">=", limit: number) {
  const met = op === "<=" ? value <= limit : value >= limit;
  return { value, target: `${op} ${limit}`, met };
}

function loadavg(): number {
  return Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
}

async function main(): Promise<void> {
  const loadStart = loadavg();
  await ensureBuilt();
  const qm = await startQm(dir, {
    tokens: TOKENS,
    tokenMs: TOKEN_MS,
    loadDelayMs: LOAD_DELAY_MS,
    readyFile,
  });
  log(`qm ${qm.url} (pid ${qm.pid}); temp dir ${dir}`);
  await Bun.sleep(1000);
  const idleSamples: number[] = [];
  for (let i = 0; i < 5; i++) {
    idleSamples.push(rssMb(qm.pid) ?? Number.NaN);
    await Bun.sleep(100);
  }
  const idle = percentile(idleSamples, 50);

  const direct = await load(qm, MODELS.demo);
  const bare = await startListening(
    "bare forwarder",
    [
      process.execPath,
      join(import.meta.dir, "bench/bare-forwarder.ts"),
      "--port",
      "0",
      "--target",
      direct,
    ],
    join(dir, "bare.log"),
  );
  const a = await nonStream(
    { direct, bare: bare.url, qm: qm.url },
    { bare: bare.proc.pid, qm: qm.pid },
  );

  const streamDirect = await load(qm, MODELS.stream);
  const bareStream = await startListening(
    "bare stream forwarder",
    [process.execPath, BARE, "--port", "0", "--target", streamDirect],
    join(dir, "bare-stream.log"),
  );
  const b = await streams(
    { direct: streamDirect, bare: bareStream.url, qm: qm.url },
    { bare: bareStream.proc.pid, qm: qm.pid },
  );
  const c = await readiness(qm);
  const idleLoaded = rssMb(qm.pid) ?? Number.NaN;

  const c1 = a.c1 as Record<Target, Cell>;
  const c32 = a.c32 as Record<Target, Cell>;
  const rpsRatio = round(c32.qm.rps / c32.bare.rps);
  const added = round(c1.qm.p50_ms - c1.direct.p50_ms);
  const report = {
    machine: {
      cores: cpus().length,
      bun: Bun.version,
      platform: `${process.platform}-${process.arch}`,
      // Other work on the box skews every figure; the 1-minute load average shows it.
      loadavg_start: loadStart,
      loadavg_end: loadavg(),
    },
    nonstream: {
      ...a,
      qm_vs_bare_rps_c32: rpsRatio,
      qm_added_p50_ms_c1: added,
      bare_added_p50_ms_c1: round(c1.bare.p50_ms - c1.direct.p50_ms),
      bare_vs_direct_rps_c32: round(c32.bare.rps / c32.direct.rps),
      method: `closed loop, ${WARMUP_MS} ms warm-up then ${CELL_MS} ms per cell; same upstream process`,
    },
    streams: {
      streams: STREAMS,
      tokens: TOKENS,
      token_ms: TOKEN_MS,
      added_ms_p50: b.qm.ms_p50,
      added_ms_p99: b.qm.ms_p99,
      coalesced_reads: b.qm.coalesced_reads,
      chunks: b.qm.chunks,
      qm: b.qm,
      bare: b.bare,
      direct: b.direct,
      clock_check: b.clock,
      method: "per chunk: client receive epoch ms − upstream send epoch ms embedded in the chunk",
    },
    readiness_gap_ms: {
      ...c,
      method: `load delay ${LOAD_DELAY_MS} ms; gap = client's first byte − end of upstream load`,
    },
    rss_mb: {
      idle: round(idle, 1),
      idle_state: "1 s after start, no model loaded",
      peak_streams: round(b.peakRss, 1),
      after_all_models_loaded: round(idleLoaded, 1),
    },
    targets: {
      qm_vs_bare_rps_c32: target(rpsRatio, ">=", 0.85),
      qm_added_p50_ms_c1: target(added, "<=", 0.5),
      stream_added_ms_p99: target(b.qm.ms_p99, "<=", 2),
      stream_coalesced_reads: target(b.qm.coalesced_reads, "<=", 0),
      readiness_gap_ms_max: target(c.max, "<=", 30),
      rss_idle_mb: target(round(idle, 1), "<=", 80),
    },
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

await withCleanup(main);
rmSync(dir, { recursive: true, force: true });
