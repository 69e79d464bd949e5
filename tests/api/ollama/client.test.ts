/**
 * The official `ollama` npm client against qm's Ollama routes, in-process: the client's fetch
 * is the app's handler (no socket), the upstream a fake OpenAI server.
 */
import { describe, expect, test } from "bun:test";
import { Ollama } from "ollama";
import { jsonOf, useFakeFetch } from "../../support/fake-fetch.ts";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { appOf } from "../../support/in-process.ts";
import { chunk, completion, sseResponse, sseText } from "../../support/openai-answers.ts";

const up = useFakeFetch();
const TOML = `
[models."llama3.2"]
cmd = "llama-server -m /m/llama-3.2-3B-Q4_K_M.gguf"
proxy = "${up.url}"
check_endpoint = "none"
est_vram_gb = 2
ttl_s = 300

${modelToml("embedder", up)}`;

function client(gw: FakeGw): Ollama {
  const app = appOf(gw);
  return new Ollama({
    host: "http://127.0.0.1:11434",
    fetch: (async (input: string | URL | Request, init?: RequestInit) =>
      app.handle(
        new Request(String(input instanceof Request ? input.url : input), init),
      )) as typeof fetch,
  });
}

const WEATHER = {
  type: "function",
  function: {
    name: "get_weather",
    description: "the weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

describe("the ollama npm client", () => {
  test("chat, not streamed", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () => completion({ content: "Hi there" }, "stop");
    const res = await client(gw).chat({
      model: "llama3.2",
      messages: [{ role: "user", content: "hello" }],
      options: { temperature: 0 },
    });
    expect(res.message).toEqual({ role: "assistant", content: "Hi there" });
    expect(res.done).toBe(true);
    expect(res.done_reason).toBe("stop");
    expect(res.eval_count).toBe(4);
    expect(jsonOf(up.last()).temperature).toBe(0);
  });

  test("chat, streamed: the parts in order, the last done", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () =>
      sseResponse(
        sseText([chunk({ content: "Hel" }), chunk({ content: "lo" }), chunk({}, "stop")]),
      );
    const parts: string[] = [];
    let last: { done: boolean; done_reason: string } | null = null;
    for await (const part of await client(gw).chat({
      model: "llama3.2",
      messages: [{ role: "user", content: "hello" }],
      stream: true,
    })) {
      parts.push(part.message.content);
      last = part;
    }
    expect(parts).toEqual(["Hel", "lo", ""]);
    expect(last).toMatchObject({ done: true, done_reason: "stop" });
    expect(gw.releases).toHaveLength(1);
  });

  test("chat with tools: the call comes back with object arguments; the result goes back by name", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () =>
      sseResponse(
        sseText([
          chunk({ tool_calls: [{ index: 0, id: "call_9", function: { name: "get_weather" } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }),
          chunk({}, "tool_calls"),
        ]),
      );
    const ollama = client(gw);
    const calls = [];
    for await (const part of await ollama.chat({
      model: "llama3.2",
      messages: [{ role: "user", content: "weather in Paris?" }],
      tools: [WEATHER],
      stream: true,
    })) {
      calls.push(...(part.message.tool_calls ?? []));
    }
    expect(calls).toEqual([
      { id: "call_9", function: { index: 0, name: "get_weather", arguments: { city: "Paris" } } },
    ] as never);
    expect(gw.releases).toEqual([{ toolCalls: true }]);
    up.answer = () => completion({ content: "It is sunny." }, "stop");
    const res = await ollama.chat({
      model: "llama3.2",
      messages: [
        { role: "user", content: "weather in Paris?" },
        { role: "assistant", content: "", tool_calls: calls },
        { role: "tool", content: "sunny", tool_name: "get_weather" },
      ],
      tools: [WEATHER],
    });
    expect(res.message.content).toBe("It is sunny.");
    const sent = jsonOf(up.last());
    expect(sent.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_9",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: "tool", content: "sunny", tool_call_id: "call_9" },
    ]);
  });

  test("generate, and an error surfaces as the client's error", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () => completion({ content: "42" }, "stop");
    const ollama = client(gw);
    const res = await ollama.generate({ model: "llama3.2", prompt: "answer?" });
    expect(res.response).toBe("42");
    await expect(ollama.generate({ model: "nope", prompt: "x" })).rejects.toThrow(
      '"nope" not found',
    );
  });

  test("embed (a list) and the older embeddings", async () => {
    const gw = fakeGateway(TOML);
    up.answer = (sent) => {
      const input = jsonOf(sent).input as string[];
      return Response.json({
        data: input.map((_, i) => ({
          index: input.length - 1 - i,
          embedding: [input.length - 1 - i, 0.5],
        })),
        usage: { prompt_tokens: 6 },
      });
    };
    const ollama = client(gw);
    const res = await ollama.embed({
      model: "embedder",
      input: ["a", "b", "c"],
      keep_alive: "10m",
    });
    expect(res.embeddings).toEqual([
      [0, 0.5],
      [1, 0.5],
      [2, 0.5],
    ]);
    expect(res.prompt_eval_count).toBe(6);
    expect(gw.hooks.at(-1)?.keepAliveMs).toBe(600_000);
    const old = await ollama.embeddings({ model: "embedder", prompt: "a" });
    expect(old.embedding).toEqual([0, 0.5]);
    expect(jsonOf(up.last("/v1/embeddings")).input).toEqual(["a"]);
  });

  test("tags and ps; ps reads expires_at from the status keep-alive (-1: for ever)", async () => {
    const gw = fakeGateway(TOML);
    const ollama = client(gw);
    const tags = await ollama.list();
    expect(tags.models.map((m) => m.name)).toEqual(["llama3.2", "embedder"]);
    expect(tags.models[0]?.details.quantization_level).toBe("Q4_K_M");
    expect((await ollama.ps()).models).toEqual([]);
    gw.states["llama3.2"] = "ready";
    gw.keepAlive["llama3.2"] = -1;
    const ps = await ollama.ps();
    expect(ps.models.map((m) => m.name)).toEqual(["llama3.2"]);
    expect(new Date(ps.models[0]!.expires_at).getUTCFullYear()).toBe(2318);
  });
});
