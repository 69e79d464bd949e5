/** `GET /v1/models/{id}` and the Anthropic-shaped model list, in-process over a fake Gateway. */
import { beforeEach, describe, expect, test } from "bun:test";
import { useFakeFetch } from "../../support/fake-fetch.ts";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { type App, appOf, bodyOf, call } from "../../support/in-process.ts";

const up = useFakeFetch();
const QUIET = '[server]\nlog_level = "error"\n';
const ANTHROPIC = { "anthropic-version": "2023-06-01" };

let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(
    QUIET +
      modelToml("m", up, 'aliases = ["gpt-local"]') +
      modelToml(`"org/big"`, up) +
      modelToml("hidden", up, "unlisted = true"),
  );
  gw.states.m = "ready";
  app = appOf(gw);
});

describe("GET /v1/models/{id}", () => {
  test("answers one model in the OpenAI shape", async () => {
    const res = await call(app, "GET", "/v1/models/m");
    expect(res.status).toBe(200);
    const body = await bodyOf(res);
    expect(body).toMatchObject({ id: "m", object: "model", owned_by: "quartermaster" });
    expect(typeof body.created).toBe("number");
  });

  test("an id with `/` and an alias both resolve", async () => {
    expect((await bodyOf(await call(app, "GET", "/v1/models/org/big"))).id).toBe("org/big");
    expect((await bodyOf(await call(app, "GET", "/v1/models/org%2Fbig"))).id).toBe("org/big");
    expect((await bodyOf(await call(app, "GET", "/v1/models/gpt-local"))).id).toBe("m");
  });

  test("an unknown id is a 404 in the OpenAI envelope", async () => {
    const res = await call(app, "GET", "/v1/models/nope");
    expect(res.status).toBe(404);
    expect((await bodyOf(res)).error).toMatchObject({
      message: 'model "nope" not found; GET /v1/models lists them',
    });
  });

  test("POST is a 405 naming GET", async () => {
    const res = await call(app, "POST", "/v1/models/m", "{}");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET");
  });
});

describe("with anthropic-version", () => {
  test("the list is in the Anthropic shape", async () => {
    const res = await call(app, "GET", "/v1/models", null, ANTHROPIC);
    const body = await bodyOf(res);
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(["m", "org/big"]);
    expect(body.data[0]).toMatchObject({ type: "model", id: "m", display_name: "m" });
    expect(new Date(body.data[0].created_at).toISOString()).toBe(body.data[0].created_at);
    expect([body.has_more, body.first_id, body.last_id]).toEqual([false, "m", "org/big"]);
  });

  test("one model is in the Anthropic shape; an unknown one is a 404 in its envelope", async () => {
    const one = await bodyOf(await call(app, "GET", "/v1/models/gpt-local", null, ANTHROPIC));
    expect(one).toMatchObject({ type: "model", id: "m", display_name: "m" });
    const res = await call(app, "GET", "/v1/models/nope", null, ANTHROPIC);
    expect(res.status).toBe(404);
    expect((await bodyOf(res)).type).toBe("error");
  });
});
