/**
 * `bun run bench`: qm's forwarding overhead, measured side by side in one run on loopback.
 * Prints one JSON report on stdout; progress goes to stderr. Every process started here is
 * stopped however the run ends (scripts/bench/procs.ts).
 *
 * (a) Non-streamed latency/throughput at 1 and 32 clients against one `qm demo-upstream`
 *     process: directly, through a bare Bun.serve+fetch forwarder (the floor for any Bun proxy
 *     here) and through qm — interleaved rounds (scripts/bench/nonstream.ts).
 * (b) 100 concurrent streams of 500 tokens; per-chunk one-way latency from timestamps the
 *     upstream embeds in each chunk, and coalesced reads (scripts/bench/streams.ts).
 * (c) Readiness gap: upstream healthy → first byte to the waiting client, over several
 *     unload/reload cycles (scripts/bench/readiness.ts).
 * (d) qm's own RSS (VmRSS of the qm pid, not its children): idle 1 s after start with no model
 *     loaded, and the peak sampled every 25 ms while (b) runs through qm.
 * (f) qm's own JavaScript per request, in-process with fetch answering from memory
 *     (scripts/bench/overhead.ts).
 * (e) Translation cost: the same streamed answer through `/v1/messages` (translated to the
 *     OpenAI chat API and back) and `/v1/chat/completions` (passthrough) — qm CPU per stream
 *     and per-chunk latency from stamps in each token's text (scripts/bench/anthropic.ts).
 * (g) The same for Ollama's `/api/chat` (NDJSON lines) against the same passthrough
 *     (scripts/bench/ollama.ts).
 * (h) The same for the Responses API: `/v1/responses` streamed (translated) against
 *     `/v1/chat/completions` (scripts/bench/responses.ts).
 * (i) One `/metrics` scrape with 50 models that served requests (scripts/bench/scrape.ts).
 * (j) What watching requests costs: metrics + activity log on against both off, p50 latency at
 *     1 client and throughput at 32, alternating rounds, and the in-process CPU per request
 *     (scripts/bench/observability.ts).
 * (k) The routing decision among peers: 3 peers × 50 models, µs per decision
 *     (scripts/bench/peer-route.ts).
 * (l) The latency one peer hop adds: client → A → B → upstream against client → B → upstream,
 *     whole and streamed, at 1 and 8 clients (scripts/bench/peer-hop.ts).
 * (m) From a peer's model becoming ready to the routing table knowing it, with the peer's
 *     events and by polling its status (scripts/bench/peer-known.ts).
 *
 * (n) The placement decision across several GPUs: 8 cards × 64 models, µs per decision
 *     (scripts/bench/placement.ts).
 *
 * (o) Prefetch: a multi-GB GGUF's load through qm with a cold page cache, prefetched while a
 *     lease held the other model, and fully cached; a real llama-server
 *     (scripts/bench/prefetch.ts; `--section prefetch` only).
 *
 * `bun run bench --section NAME` runs one of (j) `observability`, (l) `peer-hop`, (m)
 * `peer-known`, (n) `placement` or (o) `prefetch` alone (with the machine figures and its targets): the sections that start
 * their own qm processes and need no other.
 *
 * qm runs as the compiled binary (`dist/qm serve`, rebuilt when older than src/) with a
 * generated config; every model upstream is started by qm itself.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { raiseFetchLimit } from "../src/cli/fetch-limit.ts";
import { type Binary, buildRevision } from "./bench/against.ts";
import { anthropicRuns } from "./bench/anthropic.ts";
import { matrixSolver } from "./bench/matrix.ts";
import { type NonStreamTarget, nonStreamCells } from "./bench/nonstream.ts";
import { observabilityRuns } from "./bench/observability.ts";
import { ollamaRuns } from "./bench/ollama.ts";
import { inProcessOverhead } from "./bench/overhead.ts";
import { peerHopRuns } from "./bench/peer-hop.ts";
import { peerKnownRuns } from "./bench/peer-known.ts";
import { peerRoute } from "./bench/peer-route.ts";
import { placement } from "./bench/placement.ts";
import { DEFAULT_MODEL, prefetchRuns } from "./bench/prefetch.ts";
import { startListening, withCleanup } from "./bench/procs.ts";
import { ensureBuilt, load, MODELS, QM_BIN, revision, startQm } from "./bench/qm.ts";
import { readinessRuns } from "./bench/readiness.ts";
import { RESPONSES_BENCH, responsesRuns, responsesTargets } from "./bench/responses.ts";
import { metricsScrape } from "./bench/scrape.ts";
import { SIDE_SECTIONS, sideBySide, sideTable } from "./bench/side.ts";
import { streamRuns } from "./bench/streams.ts";
import { streams1000 } from "./bench/streams-1000.ts";
import { log, percentile, round, rssMb } from "./bench/util.ts";

// The benchmark's own client holds up to 1 000 streams at once (streams-1000): more than the
// runtime lets `fetch` have in flight unless started with its limit raised, as qm is.
const fetchLimit = raiseFetchLimit();
if (fetchLimit !== null) log(`warning: the benchmark's client: ${fetchLimit}`);

const WARMUP_MS = 1000;
const ROUNDS = 3;
const ROUND_MS = 1500;
const STREAMS = 100;
const TOKENS = 500;
const TOKEN_MS = 10;
const LOAD_DELAY_MS = 250;
const READINESS_RUNS = 8;
const ANTHROPIC_STREAMS = 20;
const ANTHROPIC_TOKENS = 1000;
const ANTHROPIC_TOKEN_MS = 5;
const ANTHROPIC_ROUNDS = 2;
const OBSERVABILITY_ROUNDS = 4;
const OBSERVABILITY_IN_PROCESS_RUNS = 3;
const PEER_HOP_WARMUP_MS = 500;
const PEER_HOP_ROUNDS = 8;
const PEER_HOP_ROUND_MS = 300;
const PEER_KNOWN_RUNS = 12;
const PEER_KNOWN_LOAD_DELAY_MS = 200;
const PEER_KNOWN_POLL_S = 1;

const BARE = join(import.meta.dir, "bench/bare-forwarder.ts");
const FLOOR = join(import.meta.dir, "bench/router-floor.ts");
const dir = mkdtempSync(join(tmpdir(), "qm-bench-"));
const readyFile = join(dir, "ready.json");

function loadavg(): number {
  return Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
}

function target(value: number, op: "<=" | ">=", limit: number) {
  return { value, target: limit, op, met: op === "<=" ? value <= limit : value >= limit };
}

function bareForwarder(name: string, upstream: string, script = BARE) {
  const argv = [process.execPath, script, "--port", "0", "--target", upstream];
  return startListening(name, argv, join(dir, `${name}.log`));
}

/** The sections `--section NAME` can run alone. */
const ALONE = [
  "observability",
  "peer-hop",
  "peer-known",
  "placement",
  "streams-1000",
  "prefetch",
] as const;

function sectionArg(): (typeof ALONE)[number] | null {
  const at = process.argv.indexOf("--section");
  if (at < 0) return null;
  const name = process.argv[at + 1] ?? "";
  const found = ALONE.find((n) => n === name);
  if (!found) throw new Error(`--section: one of ${ALONE.join(", ")}, got ${JSON.stringify(name)}`);
  return found;
}

/** (j): metrics + activity on against off. */
function observability(ours: () => number[]) {
  return observabilityRuns({
    dir,
    ours,
    warmupMs: WARMUP_MS,
    roundMs: ROUND_MS,
    rounds: OBSERVABILITY_ROUNDS,
    inProcessRuns: OBSERVABILITY_IN_PROCESS_RUNS,
  });
}

function observabilityTargets(j: Awaited<ReturnType<typeof observability>>) {
  return {
    observability_p50_ratio: target(j.observability_p50_ratio, "<=", 1.05),
    observability_rps_ratio: target(j.observability_rps_ratio, ">=", 0.95),
  };
}

/** (l): one peer hop against the peer directly. */
function peerHop(ours: () => number[]) {
  return peerHopRuns({
    dir,
    ours,
    warmupMs: PEER_HOP_WARMUP_MS,
    roundMs: PEER_HOP_ROUND_MS,
    rounds: PEER_HOP_ROUNDS,
  });
}

function peerHopTargets(l: Awaited<ReturnType<typeof peerHop>>) {
  return { peer_hop_added_ms_p50: target(l.peer_hop_added_ms_p50, "<=", 0.5) };
}

/** (m): a peer's model ready → the routing table knows it. */
function peerKnown() {
  return peerKnownRuns({
    dir,
    runs: PEER_KNOWN_RUNS,
    loadDelayMs: PEER_KNOWN_LOAD_DELAY_MS,
    pollS: PEER_KNOWN_POLL_S,
  });
}

function peerKnownTargets(m: Awaited<ReturnType<typeof peerKnown>>) {
  return {
    peer_known_ms_p99: target(m.peer_known_ms_p99, "<=", 1000),
    peer_known_poll_ms_p99: target(m.peer_known_poll_ms_p99, "<=", PEER_KNOWN_POLL_S * 1000),
  };
}

function streams1000Targets(s: Awaited<ReturnType<typeof streams1000>>) {
  return {
    streams_1000_cpu_vs_floor: target(s.qm_vs_floor_cpu_per_chunk, "<=", 1.3),
    streams_1000_chunks_lost: target(s.qm.chunks_lost, "<=", 0),
    streams_1000_merged_reads: target(s.qm.merged_reads, "<=", 0),
    streams_1000_late_chunks: target(s.qm.late_chunks, "<=", 0),
    streams_1000_rss_after_mb: target(s.qm_rss_after_mb, "<=", 90),
    streams_1000_rss_settled_over_idle_mb: target(
      round(s.qm_rss_settled_mb - s.qm_rss_idle_mb, 1),
      "<=",
      10,
    ),
  };
}

function placementTargets(n: ReturnType<typeof placement>) {
  return { placement_us_p99: target(n.us_p99, "<=", 100) };
}

/** `--section NAME`: one section alone, with the machine figures and its targets. */
async function alone(name: (typeof ALONE)[number]): Promise<void> {
  const loadStart = loadavg();
  const stale = await ensureBuilt();
  const machine = (othersMax: number | null) => ({
    cores: cpus().length,
    bun: Bun.version,
    platform: `${process.platform}-${process.arch}`,
    qm_revision: revision(),
    qm_binary_older_than_src: stale,
    loadavg_start: loadStart,
    loadavg_end: loadavg(),
    ...(othersMax === null ? {} : { others_cpu_pct_max: othersMax, contended: othersMax > 5 }),
  });
  let report: Record<string, unknown>;
  if (name === "observability") {
    const j = await observability(() => [process.pid]);
    const othersMax = Math.max(j.on.others_cpu_pct, j.off.others_cpu_pct);
    report = { machine: machine(othersMax), observability: j, targets: observabilityTargets(j) };
  } else if (name === "peer-hop") {
    const l = await peerHop(() => [process.pid]);
    const othersMax = Math.max(
      ...[l.whole_c1, l.stream_c1, l.whole_c8, l.stream_c8].map((c) => c.others_cpu_pct),
    );
    report = { machine: machine(othersMax), peer_hop: l, targets: peerHopTargets(l) };
  } else if (name === "streams-1000") {
    const s = await streams1000(dir);
    report = { machine: machine(null), streams_1000: s, targets: streams1000Targets(s) };
  } else if (name === "prefetch") {
    const { summary, runs } = await prefetchRuns({
      dir,
      rounds: 3,
      holdS: 20,
      model: DEFAULT_MODEL,
    });
    report = {
      machine: machine(null),
      prefetch: { ...summary, runs },
      targets: { prefetch_vs_warm: target(summary.prefetch_vs_warm, "<=", 1.1) },
    };
  } else if (name === "placement") {
    const n = placement();
    report = { machine: machine(null), placement: n, targets: placementTargets(n) };
  } else {
    const m = await peerKnown();
    report = { machine: machine(null), peer_known: m, targets: peerKnownTargets(m) };
  }
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

/** `--against REV [--rounds N] [--sections a,b]`: this tree's binary and REV's, side by side. */
async function against(rev: string): Promise<void> {
  const loadStart = loadavg();
  await ensureBuilt(true);
  const other = await buildRevision(rev);
  const current: Binary = { label: "current", bin: QM_BIN };
  const roundsAt = process.argv.indexOf("--rounds");
  const rounds = roundsAt < 0 ? 3 : Number(process.argv[roundsAt + 1]);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error("--rounds: a whole number ≥ 1");
  const sectionsAt = process.argv.indexOf("--sections");
  const names = sectionsAt < 0 ? null : (process.argv[sectionsAt + 1] ?? "").split(",");
  const sections = SIDE_SECTIONS.filter((s) =>
    names === null ? !s.optional : names.includes(s.name),
  );
  const unknown = (names ?? []).filter((n) => !SIDE_SECTIONS.some((s) => s.name === n));
  if (unknown.length > 0) {
    throw new Error(
      `--sections: unknown ${unknown.join(", ")}; one or more of ${SIDE_SECTIONS.map((s) => s.name).join(", ")}`,
    );
  }
  const figures = await sideBySide([current, other], sections, rounds, { dir, upstreamQm: QM_BIN });
  log(
    `side by side, current (${revision()}) against ${other.label}:\n${sideTable(figures, ["current", other.label])}`,
  );
  const report = {
    machine: {
      cores: cpus().length,
      bun: Bun.version,
      platform: `${process.platform}-${process.arch}`,
      current: revision(),
      against: other.label,
      rounds,
      loadavg_start: loadStart,
      loadavg_end: loadavg(),
    },
    method:
      "each section starts a fresh qm serve of each binary on the same generated config and the " +
      "same upstream programs; rounds alternate which binary goes first; each figure is the " +
      "median of its rounds; ratio = current ÷ against",
    figures,
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

async function main(): Promise<void> {
  const againstAt = process.argv.indexOf("--against");
  if (againstAt >= 0) {
    const rev = process.argv[againstAt + 1];
    if (!rev) throw new Error("--against: give a revision (a tag, branch or commit)");
    return against(rev);
  }
  const section = sectionArg();
  if (section !== null) return alone(section);
  const loadStart = loadavg();
  const stale = await ensureBuilt();
  const setup = {
    tokens: TOKENS,
    tokenMs: TOKEN_MS,
    loadDelayMs: LOAD_DELAY_MS,
    readyFile,
    anthropicTokens: ANTHROPIC_TOKENS,
    anthropicTokenMs: ANTHROPIC_TOKEN_MS,
  };
  const qm = await startQm(dir, setup);
  log(`qm ${qm.url} (pid ${qm.pid}); temp dir ${dir}`);
  await Bun.sleep(1000);
  const idleSamples: number[] = [];
  for (let i = 0; i < 5; i++) {
    idleSamples.push(rssMb(qm.pid) ?? Number.NaN);
    await Bun.sleep(100);
  }
  const idle = round(percentile(idleSamples, 50), 1);

  // (a) Non-streamed.
  const demo = await load(qm, MODELS.demo);
  // Section (e)'s upstream is started now and idles until then: its port (`start_port` + 3,
  // fixed by the config) lies in the ephemeral range, and after (a) and (b) have opened
  // thousands of loopback connections one of them may hold it (seen: EADDRINUSE).
  const anth = await load(qm, MODELS.anthropic);
  const bare = await bareForwarder("bare", demo.url);
  const floor = await bareForwarder("floor", demo.url, FLOOR);
  const oursA = () => [process.pid, qm.pid, demo.pid, anth.pid, bare.proc.pid, floor.proc.pid];
  const a = {
    urls: { direct: demo.url, bare: bare.url, floor: floor.url, qm: qm.url },
    proxyPid: { direct: null, bare: bare.proc.pid, floor: floor.proc.pid, qm: qm.pid },
    ours: oursA,
    body: JSON.stringify({
      model: MODELS.demo,
      messages: [{ role: "user", content: "hello" }],
      max_tokens: 16,
    }),
    warmupMs: WARMUP_MS,
    roundMs: ROUND_MS,
    rounds: ROUNDS,
  };
  const c1 = await nonStreamCells(a, 1);
  const c32 = await nonStreamCells(a, 32);

  // (b) Streams.
  const stream = await load(qm, MODELS.stream);
  const bareStream = await bareForwarder("bare-stream", stream.url);
  const b = await streamRuns({
    urls: { direct: stream.url, bare: bareStream.url, qm: qm.url },
    proxyPid: { direct: null, bare: bareStream.proc.pid, qm: qm.pid },
    ours: () => [...oursA(), stream.pid, bareStream.proc.pid],
    qmPid: qm.pid,
    model: MODELS.stream,
    streams: STREAMS,
    tokens: TOKENS,
  });

  // (e) Translation cost, before (c) so it runs on the same warm qm as (b).
  // The three translation sections share qm, the stamping upstream and the stream shape.
  const translation = {
    qmUrl: qm.url,
    qmPid: qm.pid,
    ours: () => [...oursA(), stream.pid, bareStream.proc.pid],
    model: MODELS.anthropic,
    streams: ANTHROPIC_STREAMS,
    tokens: ANTHROPIC_TOKENS,
    rounds: ANTHROPIC_ROUNDS,
  };
  const e = await anthropicRuns(translation);

  // (g) The Ollama translation, on the same warm qm and upstream as (e).
  const g = await ollamaRuns(translation);

  // (h) The Responses translation, on the same upstream and warm qm.
  const h = await responsesRuns({
    ...translation,
    streams: RESPONSES_BENCH.streams,
    rounds: RESPONSES_BENCH.rounds,
  });

  // (c) Readiness.
  const c = await readinessRuns(qm, MODELS.cold, readyFile, READINESS_RUNS);
  const loaded = round(rssMb(qm.pid) ?? Number.NaN, 1);

  // (f) qm's own JavaScript per request, in-process, after the socket sections.
  log("in-process overhead");
  const f = inProcessOverhead();

  // (i) One /metrics scrape with 50 models that have served requests, in-process.
  log("metrics scrape");
  const scrape = metricsScrape();

  // (j) What watching requests costs, on two qm processes of its own.
  log("observability");
  const j = await observability(() => [...oursA(), stream.pid, bareStream.proc.pid]);

  // (l) One peer hop, and (m) how soon a peer's model is known, on qm processes of their own.
  log("peer hop");
  const l = await peerHop(() => [...oursA(), stream.pid, bareStream.proc.pid]);
  log("peer known");
  const m = await peerKnown();

  const others = [c1, c32, b]
    .flatMap((x) => [x.direct, x.bare, x.qm].map((y) => y.others_cpu_pct))
    .concat(e.passthrough.others_cpu_pct, e.translated.others_cpu_pct)
    .concat(g.passthrough.others_cpu_pct, g.translated.others_cpu_pct);
  const othersMax = Math.max(...others);
  const ratio = (x: Record<NonStreamTarget, { rps: number }>) => round(x.qm.rps / x.bare.rps);
  const roundRatios = c32.qm.rps_rounds.map((r, i) => round(r / (c32.bare.rps_rounds[i] ?? 0)));
  const added = round(c1.qm.p50_ms - c1.direct.p50_ms);
  // (k) the routing decision among peers, in-process.
  const route = peerRoute();
  // (n) the placement decision across 8 cards, in-process.
  const n = placement();
  const report = {
    machine: {
      cores: cpus().length,
      bun: Bun.version,
      platform: `${process.platform}-${process.arch}`,
      qm_revision: revision(),
      qm_binary_older_than_src: stale,
      // Other work on the box skews every figure; see also each cell's others_cpu_pct.
      loadavg_start: loadStart,
      loadavg_end: loadavg(),
      others_cpu_pct_max: othersMax,
      // Above a few % the figures are not this machine's but this machine's minus a neighbour.
      contended: othersMax > 5,
    },
    nonstream: {
      c1,
      c32,
      qm_vs_bare_rps_c32: ratio(c32),
      qm_vs_bare_rps_c32_by_round: roundRatios,
      qm_vs_bare_rps_c1: ratio(c1),
      // What no model router can win back, and what qm's own work costs on top of it.
      floor_vs_bare_rps_c32: round(c32.floor.rps / c32.bare.rps),
      qm_vs_floor_rps_c32: round(c32.qm.rps / c32.floor.rps),
      qm_vs_floor_cpu_per_req_c32: round(
        (c32.qm.proxy_cpu_us_per_req ?? 0) / (c32.floor.proxy_cpu_us_per_req ?? 1),
      ),
      qm_vs_bare_cpu_per_req_c32: round(
        (c32.qm.proxy_cpu_us_per_req ?? 0) / (c32.bare.proxy_cpu_us_per_req ?? 1),
      ),
      qm_added_p50_ms_c1: added,
      bare_added_p50_ms_c1: round(c1.bare.p50_ms - c1.direct.p50_ms),
      bare_vs_direct_rps_c32: round(c32.bare.rps / c32.direct.rps),
      method:
        `closed loop; ${WARMUP_MS} ms warm-up per target, then ${ROUNDS} interleaved rounds ` +
        `of ${ROUND_MS} ms per target, pooled; one upstream process for all four`,
    },
    streams: {
      streams: STREAMS,
      tokens: TOKENS,
      token_ms: TOKEN_MS,
      added_ms_p50: round(b.qm.ms_p50 - b.direct.ms_p50),
      added_ms_p99: round(b.qm.ms_p99 - b.direct.ms_p99),
      one_way_ms_p50: b.qm.ms_p50,
      one_way_ms_p99: b.qm.ms_p99,
      coalesced_reads: b.qm.coalesced_reads,
      chunks: b.qm.chunks,
      qm: b.qm,
      bare: b.bare,
      direct: b.direct,
      clock_check: b.clock,
      method:
        "ms = client receive epoch ms − upstream send epoch ms embedded in each chunk " +
        "(one-way); qm, bare and direct are the same streams through qm, through the bare " +
        "forwarder and straight to the upstream; added (the target) = qm − direct at the " +
        "same percentile; one_way_ms_* are qm's own one-way figures",
    },
    readiness_gap_ms: {
      ...c,
      method: `load delay ${LOAD_DELAY_MS} ms; gap = client's first byte − end of upstream load`,
    },
    anthropic: {
      ...e,
      token_ms: ANTHROPIC_TOKEN_MS,
      method:
        `${ANTHROPIC_STREAMS} concurrent streams of ${ANTHROPIC_TOKENS} tokens ` +
        `${ANTHROPIC_TOKEN_MS} ms apart from one upstream, per route, ${ANTHROPIC_ROUNDS} ` +
        "alternating runs per route, pooled; chunk ms = client receive epoch ms − upstream " +
        "send epoch ms carried in each token's text (`<sent_ms>|`); cpu = qm utime+stime " +
        "over the run ÷ streams; added = translated p99 − passthrough p99",
    },
    ollama: {
      ...g,
      token_ms: ANTHROPIC_TOKEN_MS,
      method:
        "as anthropic, with POST /api/chat (NDJSON lines) as the translated route; chunk ms " +
        "from the same text stamps; added = translated p99 − passthrough p99",
    },
    responses: {
      ...h,
      token_ms: ANTHROPIC_TOKEN_MS,
      method: "as anthropic, with POST /v1/responses (stream: true) as the translated route",
    },
    in_process: f,
    metrics_scrape: scrape,
    observability: j,
    matrix_solver: matrixSolver(),
    peer_route: route,
    placement: n,
    peer_hop: l,
    peer_known: m,
    rss_mb: {
      idle,
      idle_state: "1 s after start, no model loaded",
      peak_streams: round(b.peakRss, 1),
      after_all_models_loaded: loaded,
    },
    targets: {
      qm_vs_bare_rps_c32: target(ratio(c32), ">=", 0.85),
      qm_added_p50_ms_c1: target(added, "<=", 0.5),
      stream_added_ms_p99: target(round(b.qm.ms_p99 - b.direct.ms_p99), "<=", 2),
      stream_coalesced_reads: target(b.qm.coalesced_reads, "<=", 0),
      readiness_gap_ms_max: target(c.max, "<=", 30),
      rss_idle_mb: target(idle, "<=", 80),
      metrics_scrape_ms_50_models: target(scrape.scrape_ms_p50, "<=", 20),
      peer_route_us_p99: target(route.us_p99, "<=", 50),
      anthropic_cpu_ratio: target(e.cpu_ratio, "<=", 1.5),
      anthropic_added_ms_p99: target(e.added_ms_p99_over_passthrough, "<=", 1),
      ollama_cpu_ratio: target(g.cpu_ratio, "<=", 1.5),
      ollama_added_ms_p99: target(g.added_ms_p99_over_passthrough, "<=", 1),
      ...responsesTargets(h),
      ...observabilityTargets(j),
      ...peerHopTargets(l),
      ...peerKnownTargets(m),
      ...placementTargets(n),
    },
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

await withCleanup(main, () => rmSync(dir, { recursive: true, force: true }));
