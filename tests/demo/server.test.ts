/** The demo upstream's HTTP surface, served in-process on port 0. */
import { afterEach, describe, expect, test } from "bun:test";
import { DEFAULT_DEMO_OPTIONS, type DemoOptions } from "../../src/demo/flags.ts";
import { type DemoServer, startDemoServer } from "../../src/demo/server.ts";
import { chunks, readSse } from "./sse.ts";

const servers: DemoServer[] = [];
let crashes: string[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  crashes = [];
});

/** The load delay runs on this fake clock: tests move it instead of waiting. */
let clockMs = 0;

function demo(over: Partial<DemoOptions> = {}): DemoServer {
  const s = startDemoServer(
    { ...DEFAULT_DEMO_OPTIONS, name: "demo-1", tokenMs: 0, tokens: 6, ...over },
    { crash: (m) => crashes.push(m), now: () => clockMs },
  );
  servers.push(s);
  return s;
}

function post(s: DemoServer, path: string, body: unknown): Promise<Response> {
  return fetch(s.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

const chat = { model: "alias-x", messages: [{ role: "user", content: "hi" }] };

describe("--markdown", () => {
  test("answers are a Markdown document, its line breaks kept across tokens", async () => {
    const s = demo({ markdown: true, tokens: 16 });
    const body = (await (await post(s, "/v1/chat/completions", chat)).json()) as {
      choices: { message: { content: string } }[];
    };
    const text = body.choices[0]!.message.content;
    expect(text.startsWith("## demo-1\n\nA **demo** answer")).toBe(true);
    expect(text).toContain("\n- first point\n- second point");
  });
});

describe("health and models", () => {
  test("/health is 503 while loading, then 200", async () => {
    const s = demo({ loadDelayMs: 150 });
    const loading = await fetch(`${s.url}/health`);
    expect(loading.status).toBe(503);
    expect(await loading.json()).toEqual({ status: "loading model" });
    const early = await post(s, "/v1/chat/completions", chat);
    expect(early.status).toBe(503);
    clockMs = s.readyAt; // the load delay has passed
    const ready = await fetch(`${s.url}/health`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ok" });
  });

  test("/health never answers with hangHealth", async () => {
    const s = demo({ hangHealth: true });
    const res = fetch(`${s.url}/health`, { signal: AbortSignal.timeout(100) });
    expect(res).rejects.toThrow();
    await res.catch(() => {});
  });

  test("/v1/models lists the name", async () => {
    const body = (await (await fetch(`${demo().url}/v1/models`)).json()) as {
      object: string;
      data: { id: string; object: string }[];
    };
    expect(body.object).toBe("list");
    expect(body.data).toHaveLength(1);
    expect(body.data[0]).toMatchObject({ id: "demo-1", object: "model" });
  });
});

describe("chat completions", () => {
  test("stream: role chunk, one chunk per token, finish_reason, usage, [DONE]", async () => {
    const s = demo();
    const res = await post(s, "/v1/chat/completions", {
      ...chat,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const all = chunks(await readSse(res));
    for (const c of all) {
      expect(c).toMatchObject({
        object: "chat.completion.chunk",
        model: "alias-x",
        id: all[0]!.id,
      });
      expect(typeof c.created).toBe("number");
    }
    const choices = all.map((c) => c.choices as Record<string, unknown>[]);
    expect(choices[0]![0]!.delta).toEqual({ role: "assistant", content: "" });
    const text = choices.map((c) => (c[0]?.delta as { content?: string })?.content ?? "").join("");
    expect(text).toBe("Hello! I am demo-1, a demo");
    expect(choices.slice(1, 7).every((c) => c[0]!.finish_reason === null)).toBe(true);
    expect(choices[7]![0]).toMatchObject({ delta: {}, finish_reason: "stop" });
    expect(all[8]).toMatchObject({
      choices: [],
      usage: { completion_tokens: 6, total_tokens: expect.any(Number) },
    });
    expect(all).toHaveLength(9);
  });

  test("stream without include_usage has no usage chunk", async () => {
    const all = chunks(
      await readSse(await post(demo(), "/v1/chat/completions", { ...chat, stream: true })),
    );
    expect(all).toHaveLength(8);
    expect(all.some((c) => "usage" in c)).toBe(false);
  });

  test("tokens are paced by tokenMs, each in its own chunk", async () => {
    const s = demo({ tokenMs: 40, tokens: 4 });
    const t0 = performance.now();
    const events = await readSse(await post(s, "/v1/chat/completions", { ...chat, stream: true }));
    expect(performance.now() - t0).toBeGreaterThanOrEqual(150);
    const tokens = events.slice(1, 5);
    // Each token arrives on its own, roughly tokenMs after the previous one.
    for (let i = 1; i < tokens.length; i++) {
      expect(tokens[i]!.at - tokens[i - 1]!.at).toBeGreaterThan(20);
    }
  });

  test("tool calls stream with split arguments and finish_reason tool_calls", async () => {
    const s = demo({ toolCalls: true, tokens: 2 });
    const tools = [{ type: "function", function: { name: "lookup", parameters: {} } }];
    const all = chunks(
      await readSse(await post(s, "/v1/chat/completions", { ...chat, tools, stream: true })),
    );
    type Call = {
      index: number;
      id?: string;
      type?: string;
      function: { name?: string; arguments: string };
    };
    const deltas = all.map((c) => (c.choices as { delta: { tool_calls?: Call[] } }[])[0]!.delta);
    const calls = deltas.flatMap((d) => d.tool_calls ?? []);
    expect(calls[0]).toMatchObject({
      index: 0,
      type: "function",
      function: { name: "lookup", arguments: "" },
    });
    expect(typeof calls[0]!.id).toBe("string");
    expect(calls.length).toBeGreaterThan(2);
    const args = calls.map((c) => c.function.arguments).join("");
    expect(JSON.parse(args)).toEqual({ location: "Paris", unit: "celsius" });
    const last = (all.at(-1)!.choices as { finish_reason: string }[])[0]!;
    expect(last.finish_reason).toBe("tool_calls");
  });

  test("non-stream response", async () => {
    const res = await post(demo(), "/v1/chat/completions", { ...chat, max_tokens: 3 });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      object: "chat.completion",
      model: "alias-x",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "Hello! I am" },
          finish_reason: "length",
        },
      ],
      usage: { completion_tokens: 3 },
    });
  });

  test("non-stream tool call", async () => {
    // A tool that declares no fields: any object is valid, the demo's example stands.
    const tools = [{ type: "function", function: { name: "get_weather", parameters: {} } }];
    const body = (await (
      await post(demo({ toolCalls: true }), "/v1/chat/completions", { ...chat, tools })
    ).json()) as {
      choices: {
        message: { tool_calls: { function: { name: string; arguments: string } }[] };
        finish_reason: string;
      }[];
    };
    expect(body.choices[0]!.finish_reason).toBe("tool_calls");
    expect(body.choices[0]!.message.tool_calls[0]!.function.name).toBe("get_weather");
    expect(JSON.parse(body.choices[0]!.message.tool_calls[0]!.function.arguments)).toEqual({
      location: "Paris",
      unit: "celsius",
    });
  });

  test("crashAfterTokens calls the crash hook after N tokens", async () => {
    const s = demo({ crashAfterTokens: 2 });
    // The stream is cut (like a dying process would cut it): either the request or the
    // body read fails, and [DONE] never arrives.
    const events = await post(s, "/v1/chat/completions", { ...chat, stream: true })
      .then(readSse)
      .catch(() => []);
    expect(events.some((e) => e.data === "[DONE]")).toBe(false);
    expect(crashes).toEqual([
      "demo-upstream demo-1: simulated crash after 2 tokens (--crash-after-tokens)",
    ]);
  });
});

describe("completions and embeddings", () => {
  test("legacy completions stream", async () => {
    const all = chunks(
      await readSse(
        await post(demo(), "/v1/completions", { model: "m", prompt: "x", stream: true }),
      ),
    );
    const choices = all.map(
      (c) => (c.choices as { text: string; finish_reason: string | null }[])[0]!,
    );
    expect(all[0]).toMatchObject({ object: "text_completion", model: "m" });
    expect(choices.map((c) => c.text).join("")).toBe("Hello! I am demo-1, a demo");
    expect(choices.at(-1)!.finish_reason).toBe("stop");
  });

  test("legacy completions non-stream", async () => {
    const body = await (await post(demo(), "/v1/completions", { model: "m", prompt: "x" })).json();
    expect(body).toMatchObject({
      object: "text_completion",
      choices: [{ text: "Hello! I am demo-1, a demo", finish_reason: "stop" }],
      usage: { completion_tokens: 6 },
    });
  });

  test("embeddings are deterministic unit vectors", async () => {
    const s = demo();
    const get = async (input: unknown) =>
      (await (await post(s, "/v1/embeddings", { model: "e", input })).json()) as {
        data: { index: number; embedding: number[] }[];
        model: string;
      };
    const a = await get(["alpha", "beta"]);
    const b = await get("alpha");
    expect(a.model).toBe("e");
    expect(a.data.map((d) => d.index)).toEqual([0, 1]);
    expect(b.data[0]!.embedding).toEqual(a.data[0]!.embedding);
    expect(a.data[1]!.embedding).not.toEqual(a.data[0]!.embedding);
    const norm = Math.hypot(...a.data[0]!.embedding);
    expect(Math.abs(norm - 1)).toBeLessThan(1e-4);
  });
});

describe("errors and echo", () => {
  test("bad JSON is a 400 OpenAI error", async () => {
    const res = await post(demo(), "/v1/chat/completions", "{not json");
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: "invalid_request_error", param: null, code: null });
    expect(String(body.error.message)).toContain("not valid JSON");
  });

  test("missing messages is a 400 naming the param", async () => {
    const res = await post(demo(), "/v1/chat/completions", { model: "m" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe("messages");
  });

  test("failStatus answers every inference request with that status", async () => {
    const s = demo({ failStatus: 429 });
    for (const path of ["/v1/chat/completions", "/v1/completions", "/v1/embeddings"]) {
      const res = await post(s, path, chat);
      expect(res.status).toBe(429);
      const body = (await res.json()) as { error: { message: string; type: string } };
      expect(body.error.message).toContain("--fail-status");
    }
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  });

  test("unknown route 404, wrong method 405", async () => {
    const s = demo();
    expect((await fetch(`${s.url}/v1/nope`)).status).toBe(404);
    expect((await fetch(`${s.url}/v1/chat/completions`)).status).toBe(405);
  });

  test("/debug/echo returns what arrived", async () => {
    const s = demo();
    const res = await fetch(`${s.url}/debug/echo/sub/path?a=1&b=two`, {
      method: "PUT",
      headers: { "x-custom": "yes", "content-type": "text/plain" },
      body: "héllo body",
    });
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      method: "PUT",
      path: "/debug/echo/sub/path",
      query: "a=1&b=two",
      body: "héllo body",
      bodyLength: 11,
    });
    expect(body.headers).toMatchObject({ "x-custom": "yes", "content-type": "text/plain" });
  });
});
