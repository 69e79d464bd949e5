/**
 * `POST /api/config/reload` through the edge and routes (no socket) over a runtime with fake
 * processes: the answer, the error envelope, and keys applied to the next request.
 */
import { describe, expect, test } from "bun:test";
import { Runtime } from "../../src/runtime/runtime.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { appOf, bodyOf, call, quietLog } from "../support/in-process.ts";
import { fakeServers } from "./fake-server.ts";

const MODEL = `[resources]\ngpu_probe = "off"\n\n[models.a]\ncmd = "run a"\nproxy = "http://127.0.0.1:9"\n`;

function setup(first: string) {
  let text = first;
  const timers = new FakeTimers();
  const rt = new Runtime(config(text), {
    clock: timers,
    timers,
    log: quietLog(),
    makeProcess: fakeServers().make,
    loadConfig: (isPortFree) => config(text, { isPortFree }),
  });
  const app = appOf(rt);
  return {
    rt,
    write: (next: string) => {
      text = next;
    },
    reload: (headers: Record<string, string> = {}) =>
      call(app, "POST", "/api/config/reload", null, headers),
    status: (headers: Record<string, string> = {}) =>
      call(app, "GET", "/api/status", null, headers),
  };
}

const keys = (...k: string[]) => `[server]\napi_keys = ${JSON.stringify(k)}\n${MODEL}`;
const bearer = (k: string) => ({ authorization: `Bearer ${k}` });

describe("POST /api/config/reload", () => {
  test("a listener change is not applied; the answer says it needs a restart", async () => {
    const t = setup(MODEL);
    t.write(`[server]\nlisten = ["127.0.0.1:1"]\n${MODEL}`);
    const body = await bodyOf(await t.reload());
    expect(body.changes.needs_restart).toEqual(["server.listen"]);
    expect(body.message).toBe("needs a restart: server.listen");
    expect(t.rt.config.server.listen).toEqual(["127.0.0.1:8080"]);
  });

  test("answers ok with the changes", async () => {
    const t = setup(MODEL);
    t.write(`${MODEL}ttl_s = 9\n`);
    const res = await t.reload();
    expect(res.status).toBe(200);
    expect(await bodyOf(res)).toEqual({
      ok: true,
      changes: {
        added: [],
        removed: [],
        restart_pending: {},
        updated: { a: ["ttl_s"] },
        applied: [],
        peers: false,
        needs_restart: [],
      },
      message: "a: ttl_s",
    });
  });

  test("a bad config: 400 in the OpenAI envelope, the message is the loader's FILE:LINE:COL", async () => {
    const t = setup(MODEL);
    t.write(`${MODEL}ttl_s = -1\n`);
    const res = await t.reload();
    expect(res.status).toBe(400);
    const body = await bodyOf(res);
    expect(body.error.message).toMatch(/^test\.toml:7:\d+: models\.a\.ttl_s/);
    expect(body.error.type).toBe("invalid_request_error");
    expect(t.rt.config.models.a!.ttlS).toBe(0);
  });

  test("is behind the API key; a new key is accepted and the old one refused at the next request", async () => {
    const t = setup(keys("old"));
    expect((await t.reload()).status).toBe(401);
    t.write(keys("new"));
    expect((await t.reload(bearer("old"))).status).toBe(200);
    expect((await t.status(bearer("old"))).status).toBe(401);
    expect((await t.status(bearer("new"))).status).toBe(200);
  });

  test("GET is a 405 naming POST", async () => {
    const t = setup(MODEL);
    const res = await call(appOf(t.rt), "GET", "/api/config/reload");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
  });
});
