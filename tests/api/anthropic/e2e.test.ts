/**
 * The official clients against the compiled binary (`dist/qm serve`, demo upstreams, port 0):
 * `@anthropic-ai/sdk` 1.x (Authorization: Bearer, anthropic-version 2026-10-21) and 0.x
 * (x-api-key, 2023-06-01) for create, stream, finalMessage, a tool-use round trip, countTokens
 * and the wait status; `openai` for the OpenAI routes, which must stay a byte-exact
 * passthrough. Needs `bun run build` first.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import type Anthropic1 from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { BUILD_TIMEOUT_MS, needsBinary } from "../../support/binary.ts";
import { until, writeConfig } from "../../support/e2e.ts";
import { type QmServer, startQm } from "../../support/qm-process.ts";
import { SDKS } from "./sdk-client.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(20_000);

let qm: QmServer;
const KEY = "e2e-key";

beforeAll(async () => {
  // The shared helper writes [server]; the keys go into that table.
  const path = writeConfig(`
[groups.all]
members = ["alpha", "thinker", "cold", "crashy", "prefill", "stopper"]
swap = false
exclusive = false

[models.alpha]
cmd = "\${demo} --token-ms 0 --tokens 8 --cached-tokens 3 --ctx-size 4096"
aliases = ["claude-local"]

[models.thinker]
cmd = "\${demo} --token-ms 0 --tokens 3 --tool-calls --reasoning 4"

[models.crashy]
cmd = "\${demo} --token-ms 0 --tokens 6 --crash-after-tokens 2"

[models.prefill]
cmd = "\${demo} --token-ms 0 --tokens 3 --first-token-ms 12000"

[models.stopper]
cmd = "\${demo} --token-ms 0 --tokens 12"

[models.cold]
cmd = "\${demo} --load-delay-ms 400 --token-ms 0 --tokens 4"
`);
  const text = await Bun.file(path).text();
  writeFileSync(path, text.replace("[server]\n", `[server]\napi_keys = ["${KEY}"]\n`));
  qm = await startQm(path);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

const client = (Sdk: (typeof SDKS)[number][1], apiKey = KEY) =>
  new Sdk({ apiKey, baseURL: qm.url, maxRetries: 0 }) as Anthropic1;

const hi = {
  model: "claude-local",
  max_tokens: 64,
  messages: [{ role: "user" as const, content: "hi" }],
};
const weatherTool = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: { type: "object" as const, properties: { location: { type: "string" } } },
};

describe.each(SDKS)("%s against dist/qm", (_name, Sdk) => {
  test("create and stream().finalMessage() agree; usage carries the cached tokens", async () => {
    const c = client(Sdk);
    const made = await c.messages.create(hi);
    expect(made.model).toBe("claude-local");
    expect(made.content).toEqual([
      { type: "text", text: "Hello! I am alpha, a demo model served" } as never,
    ]);
    expect(made.stop_reason).toBe("end_turn");
    expect(made.usage.cache_read_input_tokens).toBe(3);
    const stream = c.messages.stream(hi);
    const deltas: string[] = [];
    stream.on("text", (t) => deltas.push(t));
    const final = await stream.finalMessage();
    expect(final.content as unknown[]).toEqual(made.content);
    expect(deltas.join("")).toBe("Hello! I am alpha, a demo model served");
    expect(final.usage.cache_read_input_tokens).toBe(3);
    expect(final.usage.output_tokens).toBe(8);
  });

  test("a tool-use round trip, thinking included, streamed and not", async () => {
    const c = client(Sdk);
    const ask = { ...hi, model: "thinker", tools: [weatherTool] };
    const first = await c.messages.stream(ask).finalMessage();
    expect(first.stop_reason).toBe("tool_use");
    expect(first.content.map((b) => b.type)).toEqual(["thinking", "text", "tool_use"]);
    const use = first.content[2] as { id: string; name: string; input: unknown };
    expect(use.name).toBe("get_weather");
    expect(use.input).toEqual({ location: "Paris", unit: "celsius" });
    expect(use.id).toMatch(/^[a-zA-Z0-9_-]+$/);
    const second = await c.messages.create({
      ...ask,
      messages: [
        ...ask.messages,
        { role: "assistant", content: first.content as never },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: use.id, content: "12C and sunny" }],
        },
      ],
    });
    // The tool's result ends the demo's loop: a text answer quoting it.
    expect(second.stop_reason).toBe("end_turn");
    expect((second.content[0] as { thinking: string }).thinking).toStartWith("Let me think");
    expect(second.content[1]).toEqual({
      type: "text",
      text: "Done. The tool said: 12C and sunny",
    } as never);
  });

  test("stop_sequences: the same usage streamed and not, counting what was delivered", async () => {
    const c = client(Sdk);
    const ask = { ...hi, model: "stopper", stop_sequences: ["demo"] };
    const made = await c.messages.create(ask);
    const streamed = await c.messages.stream(ask).finalMessage();
    expect(made.stop_reason).toBe("stop_sequence");
    expect(streamed.stop_reason).toBe("stop_sequence");
    expect(streamed.content as unknown[]).toEqual(made.content);
    expect(streamed.usage).toEqual(made.usage);
    const { input_tokens } = await c.messages.countTokens(ask);
    expect(made.usage.input_tokens).toBe(input_tokens);
    // Less than the 12 tokens the demo generates unstreamed: the text up to the stop.
    expect(made.usage.output_tokens).toBeGreaterThan(0);
    expect(made.usage.output_tokens).toBeLessThan(12);
  });

  test("countTokens is the upstream's own count", async () => {
    const c = client(Sdk);
    const { input_tokens } = await c.messages.countTokens({
      model: "claude-local",
      system: "be brief",
      messages: hi.messages,
      tools: [weatherTool],
    });
    expect(input_tokens).toBeGreaterThan(10);
  });

  test("an upstream that dies mid-answer is an APIError of type api_error", async () => {
    // The other SDK's run of this test crashed "crashy": the request must find it down (qm
    // then starts it afresh), not in the moment before qm has seen its exit.
    await until(
      async () => {
        const res = await fetch(`${qm.url}/api/status`, { headers: { "x-api-key": KEY } });
        const s = (await res.json()) as { models: { id: string; state: string }[] };
        return s.models.find((m) => m.id === "crashy")?.state;
      },
      (state) => state !== "ready",
    );
    const err = await client(Sdk)
      .messages.stream({ ...hi, model: "crashy" })
      .finalMessage()
      .catch((e: Error) => e);
    expect(err.constructor.name).toBe("APIError");
    expect((err as unknown as { type: string }).type).toBe("api_error");
  });

  test("a wrong key is an AuthenticationError", async () => {
    const err = await client(Sdk, "nope")
      .messages.create(hi)
      .catch((e: Error) => e);
    expect(err.constructor.name).toBe("AuthenticationError");
  });
});

test("a cold model streams the wait status first; the SDK reads through it", async () => {
  const res = await fetch(`${qm.url}/v1/messages?beta=true`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": KEY,
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify({ ...hi, model: "cold", stream: true }),
  });
  expect(res.headers.get("x-qm-model-loaded")).toBe("false");
  const text = await res.text();
  expect(text).toStartWith(": qm-status:");
  expect(text).toContain("event: message_stop");
  // Cold again: each SDK reads its message through the comments.
  for (const [, Sdk] of SDKS) {
    const auth = { authorization: `Bearer ${KEY}` };
    await fetch(`${qm.url}/api/models/cold/unload`, { method: "POST", headers: auth });
    await until(
      () =>
        fetch(`${qm.url}/api/status`, { headers: auth }).then(
          (r) => r.json() as Promise<{ models: { id: string; state: string }[] }>,
        ),
      (s) => s.models.find((m) => m.id === "cold")?.state === "stopped",
    );
    const stream = client(Sdk).messages.stream({ ...hi, model: "cold" });
    const { response } = await stream.withResponse();
    expect(response.headers.get("x-qm-model-loaded")).toBe("false");
    const final = await stream.finalMessage();
    expect(final.content[0]).toMatchObject({ type: "text", text: "Hello! I am cold," });
  }
});

// 26: longer than Bun's 10 s idle limit, so only on request (QM_SLOW_TESTS=1, ~25 s).
test.skipIf(!process.env.QM_SLOW_TESTS)(
  "a 12 s silent prefill: pings keep the stream alive, a non-stream request survives",
  async () => {
    const res = await fetch(`${qm.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": KEY },
      body: JSON.stringify({ ...hi, model: "prefill", stream: true }),
    });
    const text = await res.text();
    expect(text).toContain("event: ping");
    expect(text).toContain("event: message_stop");
    const made = await client(SDKS[1][1]).messages.create({ ...hi, model: "prefill" });
    expect(made.content[0]).toMatchObject({ type: "text", text: "Hello! I am" });
  },
  40_000,
);

test("the OpenAI routes are an untouched passthrough", async () => {
  const openai = new OpenAI({ apiKey: KEY, baseURL: `${qm.url}/v1`, maxRetries: 0 });
  const stream = openai.chat.completions.stream({
    model: "thinker",
    messages: [{ role: "user", content: "hi" }],
    tools: [{ type: "function", function: { name: "get_weather", parameters: {} } }],
    stream_options: { include_usage: true },
  });
  let reasoning = "";
  stream.on("chunk", (c) => {
    reasoning += (c.choices[0]?.delta as { reasoning_content?: string })?.reasoning_content ?? "";
  });
  const done = await stream.finalChatCompletion();
  expect(reasoning).toBe("Let me think about");
  expect(done.choices[0]?.finish_reason).toBe("tool_calls");
  const call = done.choices[0]?.message.tool_calls?.[0];
  expect(call?.type === "function" && call.function.arguments).toBe(
    '{"location":"Paris","unit":"celsius"}',
  );
  expect(done.usage?.completion_tokens).toBeGreaterThan(0);

  // Byte for byte what the upstream says, apart from the per-response id and clock.
  const body = JSON.stringify({
    model: "thinker",
    stream: true,
    messages: [{ role: "user", content: "hi" }],
  });
  const read = async (path: string) => {
    const res = await fetch(`${qm.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body,
    });
    return (await res.text())
      .replace(/(chatcmpl-demo-|call_demo_)\d+/g, "ID")
      .replace(/"created":\d+/g, "T");
  };
  expect(await read("/v1/chat/completions")).toBe(
    await read("/upstream/thinker/v1/chat/completions"),
  );
});

test("message_start's input_tokens is the count count_tokens gives (the demo's template + tokenizer)", async () => {
  const ask = {
    model: "claude-local",
    max_tokens: 16,
    system: "be brief",
    tools: [weatherTool],
    messages: [{ role: "user", content: "What is the weather in Kraków? Ответь кратко." }],
  };
  const post = (path: string, body: unknown) =>
    fetch(`${qm.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify(body),
    });
  const counted = await post("/v1/messages/count_tokens", ask);
  expect(counted.headers.get("x-qm-token-count")).toBe("upstream");
  const { input_tokens } = (await counted.json()) as { input_tokens: number };
  const text = await (await post("/v1/messages", { ...ask, stream: true })).text();
  const start = text.split("\n").find((l) => l.startsWith("data:") && l.includes("message_start"));
  const message = JSON.parse(start!.slice(5)).message;
  expect(message.usage.input_tokens).toBe(input_tokens);
});
