/**
 * Every OpenAI stream states its token counts: qm asks the upstream for the usage event the
 * client did not ask for, reads the counts, and cuts the event from what the client gets. A
 * client that asked gets it as the upstream sent it; llama-server (whose last chunk carries its
 * `timings`) is not asked.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { useFakeFetch } from "../../support/fake-fetch.ts";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { type App, appOf, call, post } from "../../support/in-process.ts";
import { chunk, sseResponse, sseText } from "../../support/openai-answers.ts";

const up = useFakeFetch();
const TOML = `[server]\nlog_level = "error"\n${modelToml("m", up)}${modelToml(
  "llama",
  up,
  "",
  "llama-server -m /models/x.gguf --port 9",
)}`;
const USAGE = { prompt_tokens: 12, completion_tokens: 3 };
const BODY = [chunk({ role: "assistant", content: "Hi" }), chunk({}, "stop")];
const dec = new TextDecoder();

let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(TOML);
  gw.states.m = "ready";
  gw.states.llama = "ready";
  app = appOf(gw);
  // The upstream sends the usage event when asked, as vLLM and OpenAI do.
  up.answer = (sent) => {
    const asked = JSON.parse(dec.decode(sent.body)).stream_options?.include_usage === true;
    return sseResponse(sseText(asked ? [...BODY, { choices: [], usage: USAGE }] : BODY));
  };
});

const chat = (extra: object = {}, model = "m") => ({
  model,
  stream: true,
  messages: [{ role: "user", content: "hi" }],
  ...extra,
});
const JSON_TYPE = { "content-type": "application/json" };
const postText = (body: string) => call(app, "POST", "/v1/chat/completions", body, JSON_TYPE);
const sentBody = () => JSON.parse(dec.decode(up.last("/v1/chat/completions").body));

describe("the usage event", () => {
  test("asked for on the client's behalf, counted, and cut from the client's stream", async () => {
    const res = await post(app, "/v1/chat/completions", chat());
    expect(await res.text()).toBe(sseText(BODY));
    expect(sentBody().stream_options).toEqual({ include_usage: true });
    expect(sentBody().messages).toEqual(chat().messages);
    expect(gw.records.at(-1)).toMatchObject({ prompt_tokens: 12, completion_tokens: 3 });
  });

  test("the client's own stream_options keep their other fields", async () => {
    const res = await post(
      app,
      "/v1/chat/completions",
      chat({ stream_options: { include_usage: false, other: 1 } }),
    );
    expect(await res.text()).toBe(sseText(BODY));
    expect(sentBody().stream_options).toEqual({ include_usage: true, other: 1 });
  });

  test("a client that asked gets the event, and its body goes up byte for byte", async () => {
    const body = JSON.stringify(chat({ stream_options: { include_usage: true } }));
    const res = await postText(body);
    expect(await res.text()).toBe(sseText([...BODY, { choices: [], usage: USAGE }]));
    expect(dec.decode(up.last("/v1/chat/completions").body)).toBe(body);
  });

  test("llama-server is not asked: its body goes up byte for byte", async () => {
    const body = JSON.stringify(chat({}, "llama"));
    const res = await postText(body);
    expect(await res.text()).toBe(sseText(BODY));
    expect(dec.decode(up.last("/v1/chat/completions").body)).toBe(body);
  });

  test("answers that are not streamed, and stream_options that are not an object, are left alone", async () => {
    for (const body of [
      JSON.stringify({ model: "m", messages: [] }),
      JSON.stringify(chat({ stream_options: "yes" })),
    ]) {
      await (await postText(body)).text();
      expect(dec.decode(up.last("/v1/chat/completions").body)).toBe(body);
    }
  });

  test("the field goes in however the body is spaced", async () => {
    const body = ` \n{ "model": "m", "stream": true, "messages": [] }`;
    await (await postText(body)).text();
    expect(sentBody()).toEqual({
      stream_options: { include_usage: true },
      model: "m",
      stream: true,
      messages: [],
    });
  });
});
