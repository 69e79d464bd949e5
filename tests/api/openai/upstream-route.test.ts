/**
 * `/upstream/{model}/{path}` in-process: the raw API of a model (its web UI, `/props`, its own
 * event streams), loaded first, against a faked fetch. Model ids may contain `/`.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { QmError } from "../../../src/shared/errors.ts";
import { scriptedBody, useFakeFetch } from "../../support/fake-fetch.ts";
import { closeGate, type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { type App, appOf, bodyOf, call } from "../../support/in-process.ts";

const up = useFakeFetch();
let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(
    `[server]\nlog_level = "error"\nmax_body_mb = 0.001\n${modelToml("m", up)}` +
      `[models.org]\ncmd = "x"\nproxy = "${up.url}/org-root"\n` +
      `[models."org/big"]\ncmd = "x"\nproxy = "${up.url}/big-root"\n`,
  );
  gw.states.m = "ready";
  app = appOf(gw);
});

const releases = () => gw.leases.map((l) => l.releases);

describe("/upstream", () => {
  test("GET: the rest of the path and the query go to the model; no body", async () => {
    up.answer = () => Response.json({ n_ctx: 4096 });
    const res = await call(app, "GET", "/upstream/m/props?fields=n_ctx");
    expect([res.status, await bodyOf(res)]).toEqual([200, { n_ctx: 4096 }]);
    expect(res.headers.get("x-qm-model")).toBe("m");
    const sent = up.last();
    expect([sent.method, sent.path, sent.body.length]).toEqual(["GET", "/props?fields=n_ctx", 0]);
    expect(sent.init.body ?? null).toBeNull();
    expect(releases()).toEqual([[{ toolCalls: false }]]);
  });

  test("the bare model path is its root", async () => {
    up.answer = () => new Response("<html>", { headers: { "content-type": "text/html" } });
    expect(await (await call(app, "GET", "/upstream/m")).text()).toBe("<html>");
    expect(up.last().path).toBe("/");
  });

  test("the longest model id that matches wins; an encoded / works too", async () => {
    up.answer = () => new Response("ok");
    const big = await call(app, "GET", "/upstream/org/big/slots");
    expect(big.headers.get("x-qm-model")).toBe("org/big");
    expect(up.last().path).toBe("/big-root/slots");
    await call(app, "GET", "/upstream/org%2Fbig/slots");
    expect(up.last().path).toBe("/big-root/slots");
    const org = await call(app, "GET", "/upstream/org/small/slots");
    expect(org.headers.get("x-qm-model")).toBe("org");
    expect(up.last().path).toBe("/org-root/small/slots");
  });

  test("a body goes as it came, with any method", async () => {
    up.answer = () => Response.json({ tokens: [1, 2] });
    for (const method of ["POST", "PUT", "DELETE"]) {
      await call(app, method, "/upstream/m/tokenize", '{"content":"hi"}', {
        "content-type": "application/json",
      });
      const sent = up.last();
      expect([sent.method, new TextDecoder().decode(sent.body)]).toEqual([
        method,
        '{"content":"hi"}',
      ]);
      expect(sent.headers.get("content-type")).toBe("application/json");
    }
    expect(releases()).toEqual([
      [{ toolCalls: false }],
      [{ toolCalls: false }],
      [{ toolCalls: false }],
    ]);
  });

  test("no such model: 404 in OpenAI's envelope, nothing sent", async () => {
    const res = await call(app, "GET", "/upstream/nope/props");
    expect(res.status).toBe(404);
    expect((await bodyOf(res)).error).toEqual({
      message: "no model matches /upstream/nope/props; GET /v1/models lists them",
      type: "invalid_request_error",
      param: null,
      code: "model_not_found",
    });
    expect(up.sent).toEqual([]);
  });

  test("a body over the limit, sent without a length: 413 naming the model; not acquired", async () => {
    const res = await call(app, "POST", "/upstream/m/completion", "x".repeat(5000));
    expect([res.status, (await bodyOf(res)).error.code]).toEqual([413, "payload_too_large"]);
    expect(res.headers.get("x-qm-model")).toBe("m");
    expect(gw.acquired).toBe(0);
  });

  test("a grant that fails is its error, naming the model", async () => {
    closeGate(gw).fail(new QmError("shutting_down", "qm is shutting down"));
    const res = await call(app, "GET", "/upstream/m/props");
    expect([res.status, (await bodyOf(res)).error.code]).toEqual([503, "shutting_down"]);
    expect(res.headers.get("x-qm-model")).toBe("m");
  });

  test("an upstream that cannot be reached: 502; released once", async () => {
    up.answer = () => Promise.reject(new TypeError("Unable to connect"));
    const res = await call(app, "GET", "/upstream/m/props");
    expect([res.status, (await bodyOf(res)).error.code]).toEqual([502, "upstream_failed"]);
    expect(res.headers.get("x-qm-model")).toBe("m");
    expect(releases()).toEqual([[{ toolCalls: false }]]);
  });

  test("a model's own event stream the client leaves: released once, upstream cancelled", async () => {
    const body = scriptedBody();
    up.answer = () =>
      new Response(body.stream, { headers: { "content-type": "text/event-stream" } });
    const res = await call(app, "GET", "/upstream/m/events");
    body.push("data: tick\n\n");
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("data: tick\n\n");
    await reader.cancel();
    await body.cancelled;
    await gw.leases[0]!.released;
    expect(releases()).toEqual([[{ toolCalls: false }]]);
  });
});
