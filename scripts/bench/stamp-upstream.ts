/**
 * A tiny OpenAI-style upstream for the benchmark that stamps time, so latency added by a proxy
 * can be measured per chunk without comparing two separate runs:
 *
 * - every streamed chunk carries `"sent_ms"`: the epoch ms (see util.ts `epochMs`) taken just
 *   before the chunk was written and flushed; the client subtracts it from its receive time;
 * - each chunk is written on its own timer tick, `--token-ms` apart, so a client read that
 *   holds two stamped chunks means they were coalesced on the way;
 * - with `--stamp-text`, each token's text is that same stamp followed by `|` (`"<sent_ms>|"`)
 *   instead of `"tok "`, so it survives a proxy that rewrites the chunks (qm's `/v1/messages`
 *   turns them into Anthropic `content_block_delta` events that carry only the text);
 * - with `--ready-file PATH`, when /health first answers 200 it writes
 *   `{"ready_at_ms","first_200_ms"}` there: when the simulated load ended (`--load-delay-ms`)
 *   and when the first successful probe was answered.
 *
 * Usage: bun scripts/bench/stamp-upstream.ts --port N [--name ID] [--tokens N] [--token-ms N]
 *        [--stamp-text] [--load-delay-ms N] [--ready-file PATH]
 * Prints `listening on http://127.0.0.1:PORT`, like `qm demo-upstream`.
 */
import { rename, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { epochMs } from "./util.ts";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    name: { type: "string", default: "stamp" },
    tokens: { type: "string", default: "500" },
    "token-ms": { type: "string", default: "10" },
    "load-delay-ms": { type: "string", default: "0" },
    "ready-file": { type: "string" },
    "stamp-text": { type: "boolean", default: false },
  },
});
const name = values.name;
const tokens = Number(values.tokens);
const tokenMs = Number(values["token-ms"]);
const readyAt = epochMs() + Number(values["load-delay-ms"]);
const readyFile = values["ready-file"];
const stampText = values["stamp-text"] === true;
let first200: number | null = null;

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };
const JSON_HEADERS = { "content-type": "application/json" };
const created = Math.floor(Date.now() / 1000);
const head = `data: {"id":"chatcmpl-stamp","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(name)},"choices":[{"index":0,"delta":`;

function chunk(delta: string, finish: string | null, sent = epochMs()): string {
  const f = finish === null ? "null" : `"${finish}"`;
  return `${head}${delta},"finish_reason":${f}}],"sent_ms":${sent}}\n\n`;
}

/** One token's chunk; with --stamp-text its text is the chunk's own send stamp and `|`. */
function token(first: boolean): string {
  const sent = epochMs();
  const text = stampText ? `${sent}|` : "tok ";
  return chunk(`{${first ? '"role":"assistant",' : ""}"content":"${text}"}`, null, sent);
}

function health(): Response {
  const now = epochMs();
  if (now < readyAt) return new Response('{"status":"loading model"}', { status: 503 });
  if (first200 === null) {
    first200 = now;
    // After the answer is on its way, so recording does not delay the probe it records.
    if (readyFile) {
      const text = JSON.stringify({ ready_at_ms: readyAt, first_200_ms: now });
      // Written aside, then renamed: a reader never sees a half-written file.
      setTimeout(
        () =>
          void writeFile(`${readyFile}.tmp`, text).then(() =>
            rename(`${readyFile}.tmp`, readyFile),
          ),
        0,
      );
    }
  }
  return new Response('{"status":"ok"}', { headers: JSON_HEADERS });
}

function stream(req: Request, count: number): Response {
  const body = new ReadableStream({
    // "direct": each write goes to the socket at flush, with no queue in between.
    type: "direct",
    async pull(controller) {
      controller.write(token(true));
      controller.flush();
      for (let i = 1; i < count; i++) {
        await Bun.sleep(tokenMs);
        if (req.signal.aborted) return controller.close();
        controller.write(token(false));
        controller.flush();
      }
      await Bun.sleep(tokenMs);
      controller.write(`${chunk("{}", "stop")}data: [DONE]\n\n`);
      controller.close();
    },
  });
  return new Response(body, { headers: SSE_HEADERS });
}

function complete(): Response {
  const text = JSON.stringify({
    id: "chatcmpl-stamp",
    object: "chat.completion",
    created,
    model: name,
    choices: [{ index: 0, message: { role: "assistant", content: "tok" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    sent_ms: epochMs(),
  });
  return new Response(text, { headers: JSON_HEADERS });
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(values.port),
  idleTimeout: 0,
  async fetch(req, srv) {
    const path = new URL(req.url).pathname;
    if (path === "/health") return health();
    if (path === "/clock") return new Response(String(epochMs()));
    if (path !== "/v1/chat/completions" || req.method !== "POST") {
      return new Response("not found", { status: 404 });
    }
    if (epochMs() < readyAt) return new Response("loading", { status: 503 });
    const body = (await req.json()) as { stream?: unknown; max_tokens?: unknown };
    srv.timeout(req, 0);
    // A smaller `max_tokens` wins, as with a real server (the benchmark's warm-up uses it).
    const max = typeof body.max_tokens === "number" ? body.max_tokens : tokens;
    return body.stream === true ? stream(req, Math.max(1, Math.min(tokens, max))) : complete();
  },
});
console.log(`listening on http://127.0.0.1:${server.port}`);

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    void server.stop(true).then(() => process.exit(0));
  });
}
