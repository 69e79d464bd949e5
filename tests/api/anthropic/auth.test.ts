/** Both key headers, both SDK generations, Anthropic-shaped 401s. */
import { afterAll, expect, test } from "bun:test";
import type { APIError } from "@anthropic-ai/sdk";
import { fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { bodyOf, post } from "../../support/in-process.ts";
import { clientFor, SDKS } from "./sdk-client.ts";
import { appFor, basic, FakeUpstream } from "./support.ts";

const up = new FakeUpstream();
afterAll(() => up.stop());
up.handle = () =>
  Response.json({ choices: [{ index: 0, message: { content: "ok" }, finish_reason: "stop" }] });
const gw = fakeGateway(`[server]\napi_keys = ["K"]\n${modelToml("m", up)}`);
gw.states.m = "ready";
const app = appFor(gw);

test("x-api-key and Authorization: Bearer are both accepted", async () => {
  expect((await post(app, "/v1/messages", basic, { "x-api-key": "K" })).status).toBe(200);
  expect((await post(app, "/v1/messages", basic, { authorization: "Bearer K" })).status).toBe(200);
  const count = await post(app, "/v1/messages/count_tokens?beta=true", basic, { "x-api-key": "K" });
  expect(count.status).toBe(200);
});

test.each(
  SDKS,
)("%s with its default auth header is accepted; a wrong key is a 401", async (_n, Sdk) => {
  const msg = await clientFor(Sdk, app, "K").messages.create(basic as never);
  expect(msg.content).toEqual([{ type: "text", text: "ok" } as never]);
  const err = (await clientFor(Sdk, app, "wrong")
    .messages.create(basic as never)
    .catch((e: unknown) => e)) as APIError;
  expect(err.status).toBe(401);
  expect(err.constructor.name).toBe("AuthenticationError");
  expect(err.error).toMatchObject({
    type: "error",
    error: { type: "authentication_error", message: "invalid API key" },
  });
});

test("no key: Anthropic envelope on /v1/messages*, OpenAI's elsewhere, /health open", async () => {
  const res = await post(app, "/v1/messages", basic);
  expect(res.status).toBe(401);
  expect((await bodyOf(res)).error.type).toBe("authentication_error");
  const openai = await post(app, "/v1/chat/completions", basic);
  expect(await bodyOf(openai)).toMatchObject({
    error: { type: "authentication_error", code: "unauthorized" },
  });
  expect((await app.handle(new Request("http://localhost/health"))).status).toBe(200);
});
