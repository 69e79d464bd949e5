/**
 * What each per-chunk feature of the relay costs, in-process: a realistic OpenAI chat stream
 * (llama-server's chunk shape, one event per read, a finish event, a usage event, `[DONE]`) is
 * fed through each piece alone and through the whole relay as a streamed chat request uses it.
 * Prints one JSON line: CPU ns per chunk, the median of several runs, for each piece.
 *
 *   npx bun scripts/bench/chunk-costs.ts [--tokens N] [--runs N]
 *
 * The pieces: `sse_check` (a broken stream never looks finished), `end_scan` (a tool-call
 * ending, for holds), `answer_scan` (usage and finish_reason for the record), `model_rewrite`
 * (the client's model name in each chunk; measured with a name that differs from the
 * upstream's, so every chunk is rewritten, and with the same name), `usage_strip` (the usage
 * event qm asked for, cut for a client that did not), and `relay` (the direct stream itself,
 * with nothing on it, and with everything a default streamed chat request puts on it).
 */
import { parseArgs } from "node:util";
import { Observer } from "../../src/api/exchange/observer.ts";
import { AnswerScan } from "../../src/observe/answer-scan.ts";
import { AnswerUsage } from "../../src/observe/answer-usage.ts";
import { EndScan, OPENAI_TOOL_CALLS } from "../../src/proxy/end-scan.ts";
import { ModelRewrite } from "../../src/proxy/model-rewrite.ts";
import { relay } from "../../src/proxy/relay.ts";
import { SseCheck } from "../../src/proxy/sse-check.ts";
import { UsageStrip } from "../../src/proxy/usage-strip.ts";
import { percentile, round } from "./util.ts";

const { values } = parseArgs({
  options: { tokens: { type: "string", default: "400" }, runs: { type: "string", default: "7" } },
});
const TOKENS = Number(values.tokens);
const RUNS = Number(values.runs);
const REPEAT = Math.max(1, Math.round(200_000 / TOKENS));

const enc = new TextEncoder();
const UPSTREAM = "/models/Qwen3-8B-Q4_K_M.gguf";

function event(delta: string, finish: string | null, extra = ""): Uint8Array {
  const f = finish === null ? "null" : `"${finish}"`;
  return enc.encode(
    `data: {"choices":[{"finish_reason":${f},"index":0,"delta":${delta}}],"created":1764855000,` +
      `"id":"chatcmpl-8Jx2kV0cQpZ1aB3s","model":"${UPSTREAM}","system_fingerprint":"b7112-3f9a2c1",` +
      `"object":"chat.completion.chunk"${extra}}\n\n`,
  );
}

function stream(tokens: number): Uint8Array[] {
  const out = [event('{"role":"assistant","content":null}', null)];
  for (let i = 0; i < tokens; i++) out.push(event(`{"content":" token${i % 97}"}`, null));
  out.push(event("{}", "stop"));
  out.push(
    enc.encode(
      `data: {"choices":[],"created":1764855000,"id":"chatcmpl-8Jx2kV0cQpZ1aB3s","model":"${UPSTREAM}",` +
        `"object":"chat.completion.chunk","usage":{"completion_tokens":${tokens},"prompt_tokens":31,` +
        `"total_tokens":${tokens + 31}},"timings":{"prompt_n":31,"prompt_ms":12.1,"predicted_n":${tokens},` +
        `"predicted_ms":${tokens * 9.2}}}\n\n`,
    ),
  );
  out.push(enc.encode("data: [DONE]\n\n"));
  return out;
}

const CHUNKS = stream(TOKENS);

/**
 * This process's CPU time (user + system), ns: unlike wall time, what other processes on a busy
 * box take does not count.
 */
function cpuNs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
}

/** CPU ns per chunk of `fn(chunks)`, run REPEAT times per run; the median of RUNS runs. */
function timeSync(fn: (chunks: Uint8Array[]) => void): number {
  for (let w = 0; w < 3; w++) fn(CHUNKS);
  const runs: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = cpuNs();
    for (let i = 0; i < REPEAT; i++) fn(CHUNKS);
    runs.push((cpuNs() - t0) / (REPEAT * CHUNKS.length));
  }
  return round(percentile(runs, 50), 1);
}

async function timeAsync(fn: () => Promise<void>, repeat: number): Promise<number> {
  for (let w = 0; w < 3; w++) await fn();
  const runs: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = cpuNs();
    for (let i = 0; i < repeat; i++) await fn();
    runs.push((cpuNs() - t0) / (repeat * CHUNKS.length));
  }
  return round(percentile(runs, 50), 1);
}

function source(): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < CHUNKS.length) c.enqueue(CHUNKS[i++] as Uint8Array);
      else c.close();
    },
  });
}

async function drain(body: ReadableStream<Uint8Array>): Promise<void> {
  const reader = body.getReader();
  while (!(await reader.read()).done) {
    // each chunk is taken as a client would
  }
}

const onEnd = { ended() {} };

const costs = {
  source_only: await timeAsync(() => drain(source()), 50),
  relay_bare: await timeAsync(() => drain(relay(source(), { onEnd })), 50),
  relay_default_chat: await timeAsync(
    () =>
      drain(
        relay(source(), {
          observer: new Observer(OPENAI_TOOL_CALLS, { tail: true }),
          rewrite: new ModelRewrite("qwen3"),
          check: new SseCheck(true),
          onEnd,
        }),
      ),
    50,
  ),
  observer_tail: timeSync((chunks) => {
    const o = new Observer(OPENAI_TOOL_CALLS, { tail: true });
    for (const x of chunks) o.chunk(x);
    o.settle();
  }),
  sse_check: timeSync((chunks) => {
    const c = new SseCheck(true);
    for (const x of chunks) c.feed(x);
    c.end();
  }),
  end_scan: timeSync((chunks) => {
    const s = new EndScan(OPENAI_TOOL_CALLS);
    for (const x of chunks) s.feed(x);
  }),
  answer_scan: timeSync((chunks) => {
    const s = new AnswerScan(new AnswerUsage());
    for (const x of chunks) s.feed(x);
  }),
  model_rewrite_renamed: timeSync((chunks) => {
    const m = new ModelRewrite("qwen3");
    for (const x of chunks) m.feed(x);
    m.end();
  }),
  model_rewrite_same_name: timeSync((chunks) => {
    const m = new ModelRewrite(UPSTREAM);
    for (const x of chunks) m.feed(x);
    m.end();
  }),
  usage_strip: timeSync((chunks) => {
    const u = new UsageStrip();
    for (const x of chunks) u.feed(x);
    u.end();
  }),
};
process.stdout.write(
  `${JSON.stringify({ unit: "ns per chunk", tokens: TOKENS, chunks: CHUNKS.length, ...costs })}\n`,
);
