/** `/api/chat` and `/api/generate` in-process, against a fake upstream (no socket). */
import { describe, expect, test } from "bun:test";
import { jsonOf, scriptedBody, useFakeFetch } from "../../support/fake-fetch.ts";
import { closeGate, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { appOf, bodyOf, post } from "../../support/in-process.ts";
import { chunk, completion, sseResponse, sseText } from "../../support/openai-answers.ts";

const up = useFakeFetch();
const TOML =
  modelToml("qwen", up, 'aliases = ["q"]', "llama-server -m /m/q.gguf --ctx-size 4096") +
  modelToml("other", up);

/** The NDJSON lines of a response, each parsed. */
async function lines(res: Response) {
  const text = await res.text();
  expect(text.endsWith("\n")).toBe(true);
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l));
}

const STREAM = sseText([
  chunk({ role: "assistant", content: "" }),
  chunk({ content: "Hel" }),
  chunk({ content: "lo" }),
  chunk({}, "stop"),
  { choices: [], usage: { prompt_tokens: 7, completion_tokens: 2 } },
]);

describe("POST /api/chat", () => {
  test("streams NDJSON lines by default; the last has done, done_reason and the counts", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () => sseResponse(STREAM);
    const res = await post(appOf(gw), "/api/chat", {
      model: "q",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(res.headers.get("x-qm-model")).toBe("qwen");
    const ls = await lines(res);
    expect(ls.map((l) => l.message.content)).toEqual(["Hel", "lo", ""]);
    expect(ls.slice(0, -1).every((l) => l.done === false && l.model === "q")).toBe(true);
    const last = ls.at(-1);
    expect(last).toMatchObject({
      done: true,
      done_reason: "stop",
      prompt_eval_count: 7,
      eval_count: 2,
    });
    for (const k of ["total_duration", "load_duration", "prompt_eval_duration", "eval_duration"]) {
      expect(Number.isInteger(last[k])).toBe(true);
    }
    expect(Number.isNaN(Date.parse(last.created_at))).toBe(false);
    const sent = jsonOf(up.last("/v1/chat/completions"));
    expect(sent).toMatchObject({
      model: "qwen",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hi" }],
    });
    expect(gw.releases).toEqual([{ toolCalls: false }]);
  });

  test("stream: false gives one object with the whole message, thinking and tool calls", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () =>
      completion(
        {
          content: "",
          reasoning_content: "hmm",
          tool_calls: [
            { id: "c1", type: "function", function: { name: "get", arguments: '{"city":"Oslo"}' } },
          ],
        },
        "tool_calls",
      );
    const res = await post(appOf(gw), "/api/chat", {
      model: "qwen",
      stream: false,
      messages: [{ role: "user", content: "weather?" }],
      tools: [{ type: "function", function: { name: "get", parameters: { type: "object" } } }],
    });
    expect(res.status).toBe(200);
    const body = await bodyOf(res);
    expect(body).toMatchObject({
      model: "qwen",
      done: true,
      done_reason: "stop",
      prompt_eval_count: 9,
      eval_count: 4,
      message: {
        role: "assistant",
        content: "",
        thinking: "hmm",
        tool_calls: [
          { id: "c1", function: { index: 0, name: "get", arguments: { city: "Oslo" } } },
        ],
      },
    });
    expect(gw.releases).toEqual([{ toolCalls: true }]);
    expect(jsonOf(up.last()).tools).toEqual([
      { type: "function", function: { name: "get", parameters: { type: "object" } } },
    ]);
  });

  test("streamed tool calls are assembled and sent whole, once complete", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () =>
      sseResponse(
        sseText([
          chunk({ tool_calls: [{ index: 0, id: "c1", function: { name: "get", arguments: "" } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: 'ty":"Oslo"}' } }] }),
          chunk({ tool_calls: [{ index: 1, id: "c2", function: { name: "t", arguments: "{}" } }] }),
          chunk({}, "tool_calls"),
        ]),
      );
    const res = await post(appOf(gw), "/api/chat", {
      model: "qwen",
      messages: [{ role: "user", content: "x" }],
    });
    const ls = await lines(res);
    expect(ls).toHaveLength(2);
    expect(ls[0].message.tool_calls).toEqual([
      { id: "c1", function: { index: 0, name: "get", arguments: { city: "Oslo" } } },
      { id: "c2", function: { index: 1, name: "t", arguments: {} } },
    ]);
    expect(ls[1]).toMatchObject({ done: true, done_reason: "stop" });
    expect(gw.releases).toEqual([{ toolCalls: true }]);
  });

  test("messages: images, assistant tool calls (object → string), tool results by name; unknown fields ignored", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () => completion({ content: "ok" }, "stop");
    await post(appOf(gw), "/api/chat", {
      model: "qwen",
      stream: false,
      messages: [
        { role: "system", content: "sys" },
        { role: "user", content: "look", images: ["iVBORw0KGgo="] },
        {
          role: "assistant",
          content: "",
          tool_calls: [{ function: { name: "get", arguments: { city: "Oslo" } } }],
        },
        { role: "tool", tool_name: "get", content: "12C" },
      ],
      format: "json",
      options: {
        temperature: 0.2,
        num_predict: 64,
        stop: ["\n\n"],
        seed: 3,
        top_k: 20,
        mirostat: 1,
      },
      think: false,
      // Fields qm has no use for are ignored, as Ollama ignores unknown ones.
      logprobs: true,
      template: "{{ .Prompt }}",
      some_future_field: { x: 1 },
    });
    const sent = jsonOf(up.last());
    expect(sent.logprobs).toBeUndefined();
    expect(sent.some_future_field).toBeUndefined();
    expect(sent.messages).toEqual([
      { role: "system", content: "sys" },
      {
        role: "user",
        content: [
          { type: "text", text: "look" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
        ],
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_0",
            type: "function",
            function: { name: "get", arguments: '{"city":"Oslo"}' },
          },
        ],
      },
      { role: "tool", content: "12C", tool_call_id: "call_0" },
    ]);
    expect(sent).toMatchObject({
      response_format: { type: "json_object" },
      temperature: 0.2,
      max_tokens: 64,
      stop: ["\n\n"],
      seed: 3,
      top_k: 20,
      stream: false,
      chat_template_kwargs: { enable_thinking: false },
      thinking_budget_tokens: 0,
    });
    expect(sent.mirostat).toBeUndefined();
  });

  test("malformed fields are 400s in Ollama's envelope naming the field; nothing is acquired", async () => {
    const gw = fakeGateway(TOML);
    const app = appOf(gw);
    const cases: [object, string][] = [
      [{ messages: [] }, '"model"'],
      [{ model: 3 }, '"model"'],
      [{ model: "qwen", messages: "hi" }, '"messages"'],
      [{ model: "qwen", messages: [{ role: "robot", content: "x" }] }, "messages[0].role"],
      [{ model: "qwen", messages: [{ role: "user", content: 5 }] }, "messages[0].content"],
      [{ model: "qwen", messages: [{ role: "user", images: "x" }] }, "messages[0].images"],
      [{ model: "qwen", options: { temperature: "hot" } }, "options.temperature"],
      [{ model: "qwen", options: [] }, '"options"'],
      [{ model: "qwen", format: "yaml" }, '"format"'],
      [{ model: "qwen", think: "max" }, '"think"'],
      [{ model: "qwen", stream: "yes" }, '"stream"'],
      [{ model: "qwen", keep_alive: "soon" }, '"keep_alive"'],
      [{ model: "qwen", tools: [{ type: "function" }] }, "tools[0].function.name"],
    ];
    for (const [body, field] of cases) {
      const res = await post(app, "/api/chat", body);
      expect(res.status).toBe(400);
      expect(res.headers.get("x-should-retry")).toBe("false");
      const err = await bodyOf(res);
      expect(Object.keys(err)).toEqual(["error"]);
      expect(err.error).toContain(field);
    }
    const notJson = await app.handle(
      new Request("http://localhost/api/chat", { method: "POST", body: "{nope" }),
    );
    expect(notJson.status).toBe(400);
    expect((await bodyOf(notJson)).error).toContain("not valid JSON");
    const missing = await post(app, "/api/chat", { model: "nope", messages: [] });
    expect(missing.status).toBe(404);
    expect((await bodyOf(missing)).error).toContain('"nope" not found');
    const get = await app.handle(new Request("http://localhost/api/chat"));
    expect(get.status).toBe(405);
    expect(gw.acquired).toBe(0);
  });

  test("an upstream refusal keeps its 4xx with its message; a 5xx is a 502", async () => {
    const gw = fakeGateway(TOML);
    const app = appOf(gw);
    up.answer = () =>
      Response.json({ error: { message: "context too long", code: 400 } }, { status: 400 });
    const res = await post(app, "/api/chat", {
      model: "qwen",
      messages: [{ role: "user", content: "x" }],
    });
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).error).toContain("context too long");
    up.answer = () => new Response("boom", { status: 500 });
    const bad = await post(app, "/api/chat", {
      model: "qwen",
      messages: [{ role: "user", content: "x" }],
    });
    expect(bad.status).toBe(502);
    expect((await bodyOf(bad)).error).toContain("boom");
    expect(gw.releases).toHaveLength(2);
  });

  test("an error inside the stream becomes an error line and ends the stream", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () =>
      sseResponse(sseText([chunk({ content: "a" }), { error: { message: "slot died" } }], false));
    const res = await post(appOf(gw), "/api/chat", {
      model: "qwen",
      messages: [{ role: "user", content: "x" }],
    });
    const ls = await lines(res);
    expect(ls).toEqual([expect.objectContaining({ done: false }), { error: "slot died" }]);
    expect(gw.releases).toHaveLength(1);
  });

  test("a stream cut short ends with an error line; the client leaving releases the lease", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () => sseResponse(sseText([chunk({ content: "a" })], false));
    const cut = await lines(
      await post(appOf(gw), "/api/chat", {
        model: "qwen",
        messages: [{ role: "user", content: "x" }],
      }),
    );
    expect(cut.at(-1).error).toContain("without finishing");
    const body = scriptedBody();
    up.answer = () => sseResponse(body.stream);
    const res = await post(appOf(gw), "/api/chat", {
      model: "qwen",
      messages: [{ role: "user", content: "x" }],
    });
    const reader = res.body!.getReader();
    body.push(`data: ${JSON.stringify(chunk({ content: "a" }))}\n\n`);
    await reader.read();
    await reader.cancel();
    await body.cancelled;
    expect(gw.releases).toHaveLength(2);
  });

  test("a cold model: no line until it is granted (Ollama has no comment line)", async () => {
    const gw = fakeGateway(TOML);
    const gate = closeGate(gw);
    up.answer = () => sseResponse(STREAM);
    let answered = false;
    const pending = post(appOf(gw), "/api/chat", {
      model: "qwen",
      messages: [{ role: "user", content: "x" }],
    }).then((r) => {
      answered = true;
      return r;
    });
    await new Promise<void>((r) => {
      gw.onWaiting = r;
    });
    expect(answered).toBe(false);
    gate.open();
    const ls = await lines(await pending);
    expect(ls.at(-1).done).toBe(true);
  });

  test("options.num_ctx asks for the ?ctx= variant unless the model already runs at that size", async () => {
    const gw = fakeGateway(TOML);
    const asked: string[] = [];
    gw.resolveModel = async (name) => {
      asked.push(name);
      return gw.resolve(name.replace(/\?ctx=\d+$/, ""));
    };
    up.answer = () => completion({ content: "ok" }, "stop");
    const app = appOf(gw);
    const msg = [{ role: "user", content: "x" }];
    await post(app, "/api/chat", {
      model: "qwen",
      messages: msg,
      stream: false,
      options: { num_ctx: 4096 },
    });
    expect(asked).toEqual([]);
    await post(app, "/api/chat", {
      model: "qwen",
      messages: msg,
      stream: false,
      options: { num_ctx: 8192 },
    });
    expect(asked).toEqual(["qwen?ctx=8192"]);
    // A server whose context flag qm does not know keeps its own size.
    await post(app, "/api/chat", {
      model: "other",
      messages: msg,
      stream: false,
      options: { num_ctx: 8192 },
    });
    expect(asked).toEqual(["qwen?ctx=8192"]);
    const tiny = await post(app, "/api/chat", {
      model: "qwen",
      messages: msg,
      options: { num_ctx: 16 },
    });
    expect(tiny.status).toBe(400);
    expect((await bodyOf(tiny)).error).toContain('"options.num_ctx"');
  });

  test("the edge's refusals on these paths use Ollama's envelope too", async () => {
    const gw = fakeGateway(`[server]\napi_keys = ["sekrit"]\nmax_body_mb = 1\n${TOML}`);
    const app = appOf(gw);
    const noKey = await post(app, "/api/chat", { model: "qwen", messages: [] });
    expect(noKey.status).toBe(401);
    expect(Object.keys(await bodyOf(noKey))).toEqual(["error"]);
    const big = await post(
      app,
      "/api/generate",
      { model: "qwen", prompt: "x".repeat(2 * 1024 * 1024) },
      { authorization: "Bearer sekrit" },
    );
    expect(big.status).toBe(413);
    expect((await bodyOf(big)).error).toContain("max_body_mb");
    expect(gw.acquired).toBe(0);
  });

  test("model with :latest resolves like Ollama's default tag", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () => completion({ content: "ok" }, "stop");
    const res = await post(appOf(gw), "/api/chat", {
      model: "q:latest",
      stream: false,
      messages: [{ role: "user", content: "x" }],
    });
    expect(res.status).toBe(200);
    expect((await bodyOf(res)).model).toBe("q:latest");
  });

  test("no messages loads the model (done_reason load); keep_alive 0 unloads it", async () => {
    const gw = fakeGateway(TOML);
    const app = appOf(gw);
    const load = await bodyOf(await post(app, "/api/chat", { model: "qwen" }));
    expect(load).toMatchObject({
      model: "qwen",
      done: true,
      done_reason: "load",
      message: { content: "" },
    });
    expect(gw.acquired).toBe(1);
    expect(gw.releases).toHaveLength(1);
    expect(up.sent).toHaveLength(0);
    const unload = await bodyOf(await post(app, "/api/chat", { model: "qwen", keep_alive: 0 }));
    expect(unload).toMatchObject({ done: true, done_reason: "unload" });
    expect(gw.unloads).toEqual(["qwen"]);
  });
});

describe("POST /api/generate", () => {
  test("prompt and system become chat turns; response chunks stream as NDJSON", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () => sseResponse(STREAM);
    const res = await post(appOf(gw), "/api/generate", {
      model: "qwen",
      prompt: "hi",
      system: "be brief",
      images: ["/9j/4AAQ"],
    });
    const ls = await lines(res);
    expect(ls.map((l) => l.response)).toEqual(["Hel", "lo", ""]);
    expect(ls.at(-1)).toMatchObject({ done: true, done_reason: "stop", eval_count: 2 });
    expect(ls.every((l) => l.message === undefined)).toBe(true);
    expect(jsonOf(up.last()).messages).toEqual([
      { role: "system", content: "be brief" },
      {
        role: "user",
        content: [
          { type: "text", text: "hi" },
          { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/4AAQ" } },
        ],
      },
    ]);
  });

  test("raw sends the prompt as it is to the completions endpoint", async () => {
    const gw = fakeGateway(TOML);
    up.answer = () =>
      Response.json({
        choices: [{ index: 0, text: "done.", finish_reason: "length" }],
        usage: { prompt_tokens: 3, completion_tokens: 1 },
      });
    const res = await post(appOf(gw), "/api/generate", {
      model: "qwen",
      prompt: "<|im_start|>user",
      raw: true,
      stream: false,
      think: true,
    });
    expect(await bodyOf(res)).toMatchObject({
      response: "done.",
      done: true,
      done_reason: "length",
    });
    const sent = up.last("/v1/completions");
    expect(jsonOf(sent)).toMatchObject({ prompt: "<|im_start|>user", stream: false });
    expect(jsonOf(sent).chat_template_kwargs).toBeUndefined();
  });

  test("an empty prompt loads the model; suffix is refused clearly", async () => {
    const gw = fakeGateway(TOML);
    const app = appOf(gw);
    const load = await bodyOf(await post(app, "/api/generate", { model: "qwen" }));
    expect(load).toMatchObject({ done: true, done_reason: "load", response: "" });
    const fim = await post(app, "/api/generate", { model: "qwen", prompt: "a", suffix: "b" });
    expect(fim.status).toBe(400);
    expect((await bodyOf(fim)).error).toContain('"suffix"');
  });
});
