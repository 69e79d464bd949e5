/** `responses_api = "native"`: `/v1/responses` passed through to an upstream that serves it. */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { appOf, post } from "../../support/in-process.ts";
import { sseResponse } from "../../support/openai-answers.ts";
import { FakeUpstream } from "../anthropic/support.ts";

const up = new FakeUpstream();
let gw: FakeGw;
afterAll(() => up.stop());
beforeEach(() => {
  gw = fakeGateway(
    modelToml("n", up, 'responses_api = "native"') +
      modelToml("renamed", up, 'responses_api = "native"\nuse_model_name = "org/served"'),
  );
  gw.states.n = "ready";
  gw.states.renamed = "ready";
});

const created = { id: "resp_up", object: "response", status: "in_progress", output: [] };
const call = {
  type: "function_call",
  id: "fc_1",
  call_id: "call_1",
  name: "f",
  arguments: "{}",
  status: "completed",
};
/** The upstream's own Responses stream, written as OpenAI writes it. */
const nativeStream = [
  { type: "response.created", sequence_number: 0, response: created },
  {
    type: "response.output_item.added",
    sequence_number: 1,
    output_index: 0,
    item: { ...call, arguments: "", status: "in_progress" },
  },
  { type: "response.output_item.done", sequence_number: 2, output_index: 0, item: call },
  {
    type: "response.completed",
    sequence_number: 3,
    response: { ...created, status: "completed", output: [call] },
  },
]
  .map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)
  .join("");

describe('responses_api = "native"', () => {
  test("a stream goes through byte for byte; the request unchanged; the hold learns of the call", async () => {
    up.handle = () => sseResponse(nativeStream);
    const request = {
      model: "n",
      input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
      tools: [{ type: "web_search" }],
      store: false,
      include: ["reasoning.encrypted_content"],
      stream: true,
    };
    const res = await post(appOf(gw), "/v1/responses", request);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(nativeStream);
    expect(up.last("/v1/responses").body).toEqual(request);
    expect(up.requests.some((r) => r.path.startsWith("/v1/chat"))).toBe(false);
    expect(gw.leases.map((l) => l.releases)).toEqual([[{ toolCalls: true }]]);
  });

  test("use_model_name rewrites model; a whole answer and a refusal come back as they are", async () => {
    up.handle = () => Response.json({ ...created, status: "completed", output: [] });
    const client = new OpenAI({
      apiKey: "k",
      baseURL: "http://localhost/v1",
      maxRetries: 0,
      fetch: async (input: string | URL | Request, init?: RequestInit) =>
        appOf(gw).handle(new Request(input as string, init)),
    });
    const r = await client.responses.create({ model: "renamed", input: "hi" });
    expect(r.id).toBe("resp_up");
    expect(up.last("/v1/responses").body.model).toBe("org/served");
    expect(gw.leases.at(-1)?.releases).toEqual([{ toolCalls: false }]);
    up.handle = () =>
      Response.json(
        { error: { message: "bad input", type: "invalid_request_error" } },
        { status: 422 },
      );
    const err = await client.responses.create({ model: "n", input: "hi" }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(422);
    expect(err.message).toContain("bad input");
  });
});
