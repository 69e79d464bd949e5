/**
 * The control routes in-process: `/health`, `/api/status`, `/running`, model load / unload /
 * logs, leases and the event stream, over a fake Gateway. Errors use the OpenAI envelope.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { QmError } from "../../../src/shared/errors.ts";
import { useFakeFetch } from "../../support/fake-fetch.ts";
import { closeGate, type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { type App, appOf, bodyOf, call } from "../../support/in-process.ts";

const up = useFakeFetch();
let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(
    '[server]\nlog_level = "error"\n' +
      modelToml("m", up, 'aliases = ["mm"]') +
      modelToml("other", up, "est_vram_gb = 3.5"),
  );
  app = appOf(gw);
});

const get = (path: string) => call(app, "GET", path);
const postTo = (path: string, body?: string) => call(app, "POST", path, body);

async function notFound(res: Response, message: string) {
  expect(res.status).toBe(404);
  expect(await bodyOf(res)).toEqual({
    error: { message, type: "invalid_request_error", param: null, code: "model_not_found" },
  });
}

describe("health and status", () => {
  test("/ says qm is running (clients probe it, HEAD too); other methods are a 405", async () => {
    const res = await get("/");
    expect([res.status, res.headers.get("content-type"), await res.text()]).toEqual([
      200,
      "text/plain; charset=utf-8",
      "quartermaster is running\n",
    ]);
    const head = await call(app, "HEAD", "/");
    expect([head.status, await head.text()]).toEqual([200, ""]);
    const posted = await postTo("/", "{}");
    expect([posted.status, posted.headers.get("allow")]).toEqual([405, "GET"]);
  });

  test("/health: ok, or 503 while shutting down", async () => {
    const ok = await get("/health");
    expect([ok.status, await bodyOf(ok)]).toEqual([200, { status: "ok" }]);
    gw.shuttingDown = true;
    const down = await get("/health");
    expect([down.status, await bodyOf(down)]).toEqual([503, { status: "shutting down" }]);
  });

  test("/api/status is the gateway's status, as it is", async () => {
    gw.states.m = "ready";
    const res = await get("/api/status");
    expect(res.headers.get("content-type")).toStartWith("application/json");
    expect(await bodyOf(res)).toEqual(JSON.parse(JSON.stringify(gw.status())));
  });

  test("/running lists the models not stopped, llama-swap's way", async () => {
    expect(await bodyOf(await get("/running"))).toEqual({ running: [] });
    gw.states.m = "starting";
    gw.states.other = "ready";
    expect(await bodyOf(await get("/running"))).toEqual({
      running: [
        { model: "m", state: "starting" },
        { model: "other", state: "ready" },
      ],
    });
  });
});

describe("models", () => {
  test("load: waits for the model, releases at once, says how long it took", async () => {
    gw.waitedMs = 1234;
    const res = await postTo("/api/models/mm/load");
    expect(await bodyOf(res)).toEqual({ model: "m", state: "ready", wait_ms: 1234 });
    expect(gw.leases.map((l) => l.releases)).toEqual([[{ toolCalls: false }]]);
  });

  test("load: an unknown model is a 404; a start that fails is the error it was", async () => {
    await notFound(
      await postTo("/api/models/nope/load"),
      'model "nope" not found; GET /v1/models lists them',
    );
    closeGate(gw).fail(new QmError("upstream_start_timeout", 'model "m" did not become ready'));
    const res = await postTo("/api/models/m/load");
    expect([res.status, (await bodyOf(res)).error.code]).toEqual([504, "upstream_start_timeout"]);
    expect(gw.leases).toEqual([]);
  });

  test("unload one: by id or alias; ?force=true (or 1) forces it", async () => {
    gw.states.m = "ready";
    expect(await bodyOf(await postTo("/api/models/mm/unload"))).toEqual({
      model: "m",
      state: "ready",
    });
    await postTo("/api/models/m/unload?force=true");
    await postTo("/api/models/m/unload?force=1");
    await postTo("/api/models/m/unload?force=no");
    expect(gw.unloads).toEqual(["m", "m force", "m force", "m"]);
    await notFound(
      await postTo("/api/models/nope/unload"),
      'model "nope" not found; GET /v1/models lists them',
    );
  });

  test("unload all, forced or not; a leased model's refusal is a 409", async () => {
    expect(await bodyOf(await postTo("/api/models/unload"))).toEqual({ unloaded: "all" });
    await postTo("/api/models/unload?force=true");
    expect(gw.unloads).toEqual(["all", "all force"]);
    gw.unloadError = new QmError("conflict", 'model "m" is leased; use ?force=true');
    for (const path of ["/api/models/unload", "/api/models/m/unload"]) {
      const res = await postTo(path);
      expect([res.status, (await bodyOf(res)).error]).toEqual([
        409,
        {
          message: 'model "m" is leased; use ?force=true',
          type: "invalid_request_error",
          param: null,
          code: "conflict",
        },
      ]);
    }
  });

  test("logs: the model's lines as plain text, one per line", async () => {
    gw.logLines.m = ["loading", "ready on 10001"];
    const res = await get("/api/models/mm/logs");
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await res.text()).toBe("loading\nready on 10001\n");
    expect(await (await get("/api/models/other/logs")).text()).toBe("");
    await notFound(
      await get("/api/models/nope/logs"),
      'model "nope" not found; GET /v1/models lists them',
    );
  });
});

describe("leases", () => {
  test("create: the TTL from the body, ten minutes without one", async () => {
    const made = await bodyOf(await postTo("/api/models/mm/lease", '{"ttl_s": 90}'));
    expect(made).toEqual({ lease: "lease-1", model: "m", expires_in_s: 90 });
    const plain = await bodyOf(await postTo("/api/models/m/lease"));
    expect(plain).toEqual({ lease: "lease-2", model: "m", expires_in_s: 600 });
    expect(gw.leaseCalls).toEqual(["lease m 90000", "lease m 600000"]);
  });

  test("create: a bad body or TTL is a 400; an unknown model a 404", async () => {
    const bad = await postTo("/api/models/m/lease", "{ttl");
    expect([bad.status, (await bodyOf(bad)).error.message]).toEqual([
      400,
      'lease body must be JSON like {"ttl_s": 600}',
    ]);
    for (const ttl of ['"60"', "0", "-5", "604801"]) {
      const res = await postTo("/api/models/m/lease", `{"ttl_s": ${ttl}}`);
      expect([res.status, (await bodyOf(res)).error.param]).toEqual([400, "ttl_s"]);
    }
    await notFound(
      await postTo("/api/models/nope/lease"),
      'model "nope" not found; GET /v1/models lists them',
    );
    expect(gw.leaseCalls).toEqual([]);
  });

  test("renew and release, by model id or alias; an unknown lease is a 404", async () => {
    const { lease } = await bodyOf(await postTo("/api/models/m/lease"));
    const renewed = await bodyOf(await postTo(`/api/models/mm/lease/${lease}`, '{"ttl_s": 30}'));
    expect(renewed).toEqual({ lease, model: "m", expires_in_s: 30 });
    const keep = await bodyOf(await postTo(`/api/models/m/lease/${lease}`));
    expect(keep.expires_in_s).toBe(30);
    const gone = await call(app, "DELETE", `/api/models/mm/lease/${lease}`);
    expect(await bodyOf(gone)).toEqual({ released: lease, model: "m" });
    expect(gw.leaseCalls).toEqual([
      "lease m 600000",
      `renew m ${lease} 30000`,
      `renew m ${lease} -`,
      `release m ${lease}`,
    ]);
    for (const res of [
      await postTo(`/api/models/m/lease/${lease}`),
      await call(app, "DELETE", `/api/models/m/lease/${lease}`),
    ]) {
      expect([res.status, (await bodyOf(res)).error.code]).toEqual([404, "not_found"]);
    }
  });
});

describe("events", () => {
  test("/api/events: a status snapshot first, then each change, numbered; cancelling unsubscribes", async () => {
    gw.publish({ type: "model", model: "m", state: "starting" });
    const res = await get("/api/events");
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    // The snapshot bears the id of the last event it includes.
    expect(first).toBe(`id: 1\nevent: status\ndata: ${JSON.stringify(gw.status())}\n\n`);
    expect(gw.listeners.size).toBe(1);
    gw.publish({ type: "model_state", model: "m", state: "ready" });
    const next = new TextDecoder().decode((await reader.read()).value);
    expect(next).toBe(
      'id: 2\nevent: model_state\ndata: {"type":"model_state","model":"m","state":"ready"}\n\n',
    );
    await reader.cancel();
    expect(gw.listeners.size).toBe(0);
  });

  test("/api/events with Last-Event-ID: what was missed, then live; too old or unknown: afresh", async () => {
    for (let i = 1; i <= 3; i++) gw.publish({ type: "model", model: "m", n: i });
    /** The first `frames` frames of the stream (each goes out as its own chunk). */
    const read = async (headers: Record<string, string>, path = "/api/events", frames = 1) => {
      const res = await call(app, "GET", path, null, headers);
      const reader = res.body!.getReader();
      let text = "";
      for (let i = 0; i < frames; i++)
        text += new TextDecoder().decode((await reader.read()).value);
      await reader.cancel();
      return text;
    };
    expect(await read({ "last-event-id": "1" }, "/api/events", 2)).toBe(
      'id: 2\nevent: model\ndata: {"type":"model","model":"m","n":2}\n\n' +
        'id: 3\nevent: model\ndata: {"type":"model","model":"m","n":3}\n\n',
    );
    expect(await read({}, "/api/events?last_event_id=2")).toStartWith("id: 3\nevent: model\n");
    for (const bad of ["99", "x", "-1", "1e3"]) {
      expect(await read({ "last-event-id": bad })).toStartWith("id: 3\nevent: status\n");
    }
    // Past the kept window (1000 events), a resume starts afresh too.
    for (let i = 0; i < 1000; i++) gw.publish({ type: "tick" });
    expect(await read({ "last-event-id": "2" })).toStartWith("id: 1003\nevent: status\n");
  });

  test("logs?follow=1: the kept lines, then each new one, as log events; cancelling unfollows", async () => {
    gw.emitLine("m", "loading weights");
    const res = await get("/api/models/mm/logs?follow=1");
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    const reader = res.body!.getReader();
    const text = async () => new TextDecoder().decode((await reader.read()).value);
    expect(await text()).toBe("event: log\ndata: loading weights\n\n");
    expect(gw.logFollowers.get("m")?.size).toBe(1);
    gw.emitLine("m", "server is listening");
    expect(await text()).toBe("event: log\ndata: server is listening\n\n");
    await reader.cancel();
    expect(gw.logFollowers.get("m")?.size).toBe(0);
    const plain = await get("/api/models/m/logs?follow=0");
    expect(await plain.text()).toBe("loading weights\nserver is listening\n");
    await notFound(
      await get("/api/models/nope/logs?follow=1"),
      'model "nope" not found; GET /v1/models lists them',
    );
  });
});

test("a wrong method on a control route is a 405 naming the allowed one", async () => {
  for (const [method, path, allow] of [
    ["POST", "/health", "GET"],
    ["DELETE", "/api/status", "GET"],
    ["GET", "/api/models/m/load", "POST"],
    ["GET", "/api/models/unload", "POST"],
  ]) {
    const res = await call(app, method!, path!);
    expect([res.status, res.headers.get("allow")]).toEqual([405, allow!]);
  }
});
