/**
 * What each per-request feature costs, in-process: the pieces a small non-streamed chat request
 * passes through, each run alone many times on a real Runtime (a ready stand-in model, no
 * socket), and the whole handler as a client request takes it. Prints one JSON line: CPU ns
 * per request, the median of several runs, for each piece. The per-chunk side is
 * chunk-costs.ts; the two make the cost table of docs/performance.md.
 *
 *   bun scripts/bench/request-costs.ts [--runs N]
 *
 * The pieces: `edge` (target, method, Host, Origin, size and key checks), `body_parse` (the
 * one JSON.parse of the body), `usage_injection` (`stream_options.include_usage` put into a
 * streamed request's bytes), `request_headers` / `response_headers` (hop-by-hop and qm's own
 * headers dropped), `scheduler` (acquire and release on a ready model), `deadline` (the time
 * limits of one call), `exchange` (the call's object, grant and end, nothing recorded),
 * `answer_scan` (usage and finish reason off a whole JSON answer), `model_rewrite` (the client's
 * name put into the answer, and the check that skips it for a server that already answers
 * with it), `activity_record` and `metrics` (one finished request recorded), and `whole`
 * (the listener's handler end to end, `fetch` answering from memory: overhead.ts's figure).
 * A capture that is off costs one null check, too little to measure here.
 */
import { parseArgs } from "node:util";
import { buildApp } from "../../src/api/app.ts";
import { createEdge } from "../../src/api/edge/gate.ts";
import { Call } from "../../src/api/exchange/call.ts";
import { Observer } from "../../src/api/exchange/observer.ts";
import { withIncludeUsage } from "../../src/api/openai/inference.ts";
import { parseJsonObject } from "../../src/api/request/body.ts";
import { loadConfigText } from "../../src/config/index.ts";
import type { ModelConfig } from "../../src/config/types.ts";
import { ActivityLog } from "../../src/observe/activity.ts";
import { QmMetrics } from "../../src/observe/prometheus.ts";
import type { RequestRecord } from "../../src/observe/record.ts";
import { AnswerNames } from "../../src/proxy/answer-names.ts";
import { Deadline } from "../../src/proxy/deadline.ts";
import { clientResponseHeaders, upstreamRequestHeaders } from "../../src/proxy/headers.ts";
import { rewriteWhole } from "../../src/proxy/model-rewrite.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import type { ModelServer } from "../../src/runtime/swap-runner.ts";
import { systemClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { percentile, round } from "./util.ts";

const { values } = parseArgs({ options: { runs: { type: "string", default: "7" } } });
const RUNS = Number(values.runs);
const REPEAT = 20_000;

function cpuNs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
}

/** CPU ns per call of `fn`, REPEAT calls per run; the median of RUNS runs after a warm-up. */
async function time(fn: () => unknown): Promise<number> {
  const go = async () => {
    for (let i = 0; i < REPEAT; i++) {
      const r = fn();
      if (r instanceof Promise) await r;
    }
  };
  await go();
  const runs: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = cpuNs();
    await go();
    runs.push((cpuNs() - t0) / REPEAT);
  }
  return round(percentile(runs, 50), 0);
}

function standIn(model: ModelConfig): ModelServer {
  let state: ModelServer["state"] = "stopped";
  return {
    get state() {
      return state;
    },
    pid: 1,
    model,
    start: () => {
      state = "ready";
      return Promise.resolve();
    },
    stop: () => {
      state = "stopped";
      return Promise.resolve();
    },
    logs: () => [],
    stderrTail: () => [],
  } as unknown as ModelServer;
}

function runtime(extra = ""): Runtime {
  const toml = `${extra}\n[models.m]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\n`;
  const cfg = loadConfigText(toml, { file: "bench.toml", env: {}, isPortFree: () => true });
  return new Runtime(cfg, { clock: systemClock, log: silentLogger, makeProcess: standIn });
}

const enc = new TextEncoder();
const ANSWER = enc.encode(
  JSON.stringify({
    id: "chatcmpl-8Jx2kV0cQpZ1aB3s",
    object: "chat.completion",
    created: 1764855000,
    model: "/models/Qwen3-8B-Q4_K_M.gguf",
    choices: [
      { index: 0, message: { role: "assistant", content: "Hello!" }, finish_reason: "stop" },
    ],
    usage: { prompt_tokens: 31, completion_tokens: 2, total_tokens: 33 },
  }),
);
const BODY = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] });
const BODY_BYTES = enc.encode(BODY);
const CLIENT_HEADERS = {
  host: "127.0.0.1:8080",
  "content-type": "application/json",
  "content-length": String(BODY.length),
  accept: "*/*",
  "user-agent": "bench",
};
const request = () =>
  new Request("http://127.0.0.1:8080/v1/chat/completions", {
    method: "POST",
    headers: CLIENT_HEADERS,
    body: BODY,
  });
const upstreamHeaders = new Response("", {
  headers: {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(ANSWER.length),
    date: new Date().toUTCString(),
    server: "llama.cpp",
    "keep-alive": "timeout=5, max=100",
  },
}).headers;
const RECORD: RequestRecord = {
  id: 0,
  time: Date.now(),
  model: "m",
  key: "anonymous",
  api: "openai",
  status: 200,
  answered: true,
  wait_ms: 0,
  swap: false,
  duration_ms: 1.2,
  ttft_ms: null,
  prompt_tokens: 31,
  completion_tokens: 2,
  cached_tokens: null,
  finish_reason: "stop",
};

const rt = runtime();
const quiet = runtime("[activity]\nenabled = false");
const model = rt.config.models.m as ModelConfig;
await rt.acquire(model, new AbortController().signal).then((l) => l.release());
await quiet.acquire(model, new AbortController().signal).then((l) => l.release());
const signal = new AbortController().signal;

const answered = new Response("{}");
const edge = createEdge(rt, () => answered, { loopback: true, log: silentLogger });
const edgeRequest = request();
const names = new AnswerNames();
names.learn("m", '"m"');
const activity = new ActivityLog(1000);
const metrics = new QmMetrics({ gauges: () => ({}) as never });

const app = buildApp(rt, { loopback: true, log: silentLogger });
globalThis.fetch = (async () =>
  new Response(ANSWER, {
    headers: { "content-type": "application/json" },
  })) as unknown as typeof fetch;

const costs = {
  edge: await time(() => edge(edgeRequest, null)),
  body_parse: await time(() => parseJsonObject(BODY_BYTES)),
  usage_injection: await time(() => withIncludeUsage(BODY_BYTES)),
  request_headers: await time(() => upstreamRequestHeaders(edgeRequest.headers)),
  response_headers: await time(() => clientResponseHeaders(upstreamHeaders)),
  scheduler: await time(() => rt.acquire(model, signal).then((l) => l.release())),
  deadline: await time(() => {
    const d = Deadline.forModel(model, { sweep: rt.calls, client: signal });
    d.start();
    d.headers();
    d.reading();
    d.read();
    d.end(true);
  }),
  exchange: await time(() => {
    const call = new Call(quiet, model, signal, silentLogger);
    call.granted({ model, waitedMs: 0, release() {} });
    call.finish(true);
    call.responded(200, false);
  }),
  answer_scan: await time(() => {
    const o = new Observer(null, { tail: true });
    o.chunk(ANSWER);
    o.settle();
  }),
  model_rewrite_renamed: await time(() => rewriteWhole(ANSWER, "m")),
  model_rewrite_skipped: await time(() => names.answers("m", "m")),
  activity_record: await time(() => activity.push(RECORD)),
  metrics: await time(() => metrics.request(RECORD)),
  whole: await time(async () => {
    const res = await app.handle(request());
    await res.arrayBuffer();
  }),
};
process.stdout.write(`${JSON.stringify({ unit: "ns per request", ...costs })}\n`);
process.exit(0);
