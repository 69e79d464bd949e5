/**
 * keep_kv measured with the real llama-server (scripts/llama/README.md): two models on the
 * same tiny GGUF in one swap group, an agent prompt of ≥ 2 000 tokens. Turn 1 on A, a request
 * to B (A is stopped), then A's next turn: its time to first token through qm and the
 * server's own `timings.prompt_ms`, with `keep_kv = true` and without. Prints one JSON line.
 * Not part of `npm test`; needs `bun run build` (dist/qm) and the llama-server build.
 *
 *   bun scripts/llama/keep-kv.ts [--family qwen3] [--runs 3] [--threads 2]
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { QM, type QmServer, startQm } from "../../tests/support/qm-process.ts";
import { LLAMA_SERVER, modelPath } from "./server.ts";

const { values } = parseArgs({
  options: {
    family: { type: "string", default: "qwen3" },
    runs: { type: "string", default: "3" },
    threads: { type: "string", default: "2" },
  },
});
const family = values.family!;
const runs = Number(values.runs);
const gguf = modelPath(family);
for (const f of [QM, LLAMA_SERVER, gguf]) {
  if (!existsSync(f)) throw new Error(`${f} is missing (bun run build; scripts/llama/README.md)`);
}

// An agent's standing prompt: instructions and a tool catalogue, well over 2 000 tokens.
const tools = Array.from({ length: 40 }, (_, i) => ({
  type: "function",
  function: {
    name: `tool_${i}`,
    description: `Tool number ${i}: reads, searches or edits files in the workspace; returns JSON with the outcome and any error, keyed by path and line.`,
    parameters: {
      type: "object",
      properties: {
        path: { type: "string", description: "a path inside the workspace" },
        query: { type: "string", description: "what to look for, as a regular expression" },
        limit: { type: "integer", description: "most results returned" },
      },
      required: ["path"],
    },
  },
}));
const system = Array.from(
  { length: 60 },
  (_, i) =>
    `Rule ${i}: work in small steps, read before you write, run the tests that cover the change, and report what you did not finish.`,
).join("\n");

interface Turn {
  ttftMs: number;
  promptMs: number;
  promptN: number;
  promptTokens: number;
  text: string;
}

async function turn(url: string, model: string, messages: unknown[]): Promise<Turn> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model,
      messages,
      tools,
      stream: true,
      max_tokens: 8,
      temperature: 0,
      stream_options: { include_usage: true },
    }),
  });
  if (res.status !== 200) throw new Error(`${model}: HTTP ${res.status} ${await res.text()}`);
  let ttftMs = -1;
  let buf = "";
  let text = "";
  let timings: { prompt_ms?: number; prompt_n?: number } = {};
  let promptTokens = 0;
  const decoder = new TextDecoder();
  for await (const chunk of res.body!) {
    buf += decoder.decode(chunk, { stream: true });
    let i = buf.indexOf("\n\n");
    while (i >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      i = buf.indexOf("\n\n");
      const data = frame.replace(/^data: /, "");
      if (!data.startsWith("{")) continue;
      const o = JSON.parse(data);
      const delta = o.choices?.[0]?.delta;
      if (ttftMs < 0 && (delta?.content || delta?.reasoning_content || delta?.tool_calls)) {
        ttftMs = performance.now() - t0;
      }
      text += delta?.content ?? "";
      if (o.timings) timings = o.timings;
      if (o.usage?.prompt_tokens) promptTokens = o.usage.prompt_tokens;
    }
  }
  if (ttftMs < 0) ttftMs = performance.now() - t0;
  return {
    ttftMs,
    promptMs: timings.prompt_ms ?? Number.NaN,
    promptN: timings.prompt_n ?? -1,
    promptTokens,
    text,
  };
}

async function measure(keepKv: boolean): Promise<Turn[]> {
  const dir = mkdtempSync(join(tmpdir(), "qm-keep-kv-"));
  const cmd = (id: string) =>
    `${LLAMA_SERVER} -m ${gguf} --host 127.0.0.1 --port \${PORT} -c 8192 -np 1 -t ${values.threads} --jinja --no-webui --alias ${id}`;
  const config = join(dir, "quartermaster.toml");
  writeFileSync(
    config,
    `[server]
listen = ["127.0.0.1:0"]
start_port = ${20000 + Math.floor(Math.random() * 30000)}
state_dir = "${join(dir, "state")}"

[models.a]
cmd = "${cmd("a")}"
keep_kv = ${keepKv}

[models.b]
cmd = "${cmd("b")}"
`,
  );
  let qm: QmServer | null = null;
  try {
    qm = await startQm(config);
    const out: Turn[] = [];
    for (let r = 0; r < runs; r++) {
      const first = [
        { role: "system", content: system },
        {
          role: "user",
          content: `Run ${r}: list the files under src/ and say which one is largest.`,
        },
      ];
      const t1 = await turn(qm.url, "a", first);
      if (t1.promptTokens < 2000)
        throw new Error(`prompt is ${t1.promptTokens} tokens, want ≥ 2000`);
      await turn(qm.url, "b", [{ role: "user", content: "hello" }]); // swaps a out
      const next = [
        ...first,
        { role: "assistant", content: t1.text },
        { role: "user", content: "Now open the largest one and summarise it." },
      ];
      out.push(await turn(qm.url, "a", next)); // swaps a back in: its next turn
      await turn(qm.url, "b", [{ role: "user", content: "hello" }]); // a out again for the next run
    }
    return out;
  } finally {
    if (qm) await qm.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

const cold = await measure(false);
const warm = await measure(true);
const summary = (ts: Turn[]) => ({
  ttft_ms: Math.round(median(ts.map((t) => t.ttftMs)) * 10) / 10,
  prompt_ms: Math.round(median(ts.map((t) => t.promptMs)) * 100) / 100,
  prompt_n: median(ts.map((t) => t.promptN)),
  prompt_tokens: median(ts.map((t) => t.promptTokens)),
});
const off = summary(cold);
const on = summary(warm);
console.log(
  JSON.stringify({
    family,
    runs,
    keep_kv_off: off,
    keep_kv_on: on,
    prompt_ms_ratio: Math.round((off.prompt_ms / on.prompt_ms) * 10) / 10,
    ttft_ratio: Math.round((off.ttft_ms / on.ttft_ms) * 10) / 10,
  }),
);
