/**
 * One 4 MiB delta (a model writing a whole file in one chunk) through the compiled binary:
 * translated on /v1/messages and relayed on /v1/chat/completions, both whole and intact.
 * The upstream is a fake in this process; the model's command only sleeps.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { serve } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(20_000);

const piece = 'Zürich 🗼 "quoted" \\ line\n';
const big = piece.repeat(Math.ceil((4 << 20) / piece.length));
const frame = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const body = new TextEncoder().encode(
  frame({ role: "assistant", content: "" }) +
    frame({ content: big }) +
    frame({}, "stop") +
    "data: [DONE]\n\n",
);

const upstream = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () =>
    new Response(
      new ReadableStream({
        type: "direct",
        async pull(c) {
          for (let at = 0; at < body.length; at += 16_384) {
            await c.write(body.subarray(at, at + 16_384));
            await c.flush();
          }
          c.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    ),
});

let qm: QmServer;
beforeAll(async () => {
  qm = await serve(`
[models.big]
cmd = "sleep 3600"
proxy = "http://127.0.0.1:${upstream.port}"
check_endpoint = "none"
`);
});
afterAll(async () => {
  expect(await qm.stop()).toBe(0);
  upstream.stop(true);
});

const post = (path: string, extra: object) =>
  fetch(qm.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "big",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
      ...extra,
    }),
  });

test("translated: the delta's text arrives whole, then a normal end", async () => {
  const text = await (await post("/v1/messages", { max_tokens: 10 })).text();
  let got = "";
  let last = "";
  for (const block of text.split("\n\n")) {
    const data = block.split("\n").find((l) => l.startsWith("data: "));
    if (!data) continue;
    const e = JSON.parse(data.slice(6)) as { type: string; delta?: { text?: string } };
    if (e.type === "content_block_delta") got += e.delta?.text ?? "";
    last = e.type;
  }
  expect(got.length).toBe(big.length);
  expect(got === big).toBe(true);
  expect(last).toBe("message_stop");
});

test("relayed: byte for byte, no error event", async () => {
  const res = await post("/v1/chat/completions", {});
  const bytes = new Uint8Array(await res.arrayBuffer());
  expect(bytes.length).toBe(body.length);
  expect(Buffer.from(bytes).equals(Buffer.from(body))).toBe(true);
});
