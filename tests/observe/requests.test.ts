/**
 * The activity log: a bounded ring of finished requests, `GET /api/requests` (newest first,
 * `?limit`, `?model`, behind the API key), and each record on `/api/events` as `request`.
 */
import { describe, expect, test } from "bun:test";
import type { QmEvent } from "../../src/api/gateway.ts";
import { ActivityLog } from "../../src/observe/activity.ts";
import type { RequestRecord } from "../../src/observe/record.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { config } from "../support/config.ts";
import { useFakeFetch } from "../support/fake-fetch.ts";
import { fakeGateway, modelToml } from "../support/fake-gateway.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { appOf, bodyOf, call, post } from "../support/in-process.ts";
import { completion } from "../support/openai-answers.ts";

const up = useFakeFetch();

function rec(model: string, time: number, id = 0): RequestRecord {
  return {
    id,
    time,
    key: "anonymous",
    model,
    api: "openai",
    status: 200,
    answered: true,
    wait_ms: 0,
    swap: false,
    duration_ms: 1,
    ttft_ms: null,
    prompt_tokens: null,
    completion_tokens: null,
    cached_tokens: null,
    finish_reason: null,
  };
}

describe("the ring", () => {
  test("keeps the newest `size`, newest first; limit and model filter", () => {
    const log = new ActivityLog(3);
    for (let t = 1; t <= 5; t++) log.push(rec(t % 2 ? "a" : "b", t));
    expect(log.list().map((r) => r.time)).toEqual([5, 4, 3]);
    expect(log.list({ limit: 2 }).map((r) => r.time)).toEqual([5, 4]);
    expect(log.list({ model: "a" }).map((r) => r.time)).toEqual([5, 3]);
    expect(log.list({ model: "b", limit: 5 }).map((r) => r.time)).toEqual([4]);
  });

  test("every field comes back as it went in, nulls and flags included", () => {
    const log = new ActivityLog(2);
    const full: RequestRecord = {
      id: 1,
      time: 1764600000123,
      key: "alice",
      model: "m",
      api: "anthropic",
      status: 504,
      answered: false,
      wait_ms: 0,
      swap: true,
      duration_ms: 12.5,
      ttft_ms: 3,
      prompt_tokens: 0,
      completion_tokens: 7,
      cached_tokens: 5,
      finish_reason: "length",
    };
    log.push(full);
    log.push(rec("n", 2));
    expect(log.list()).toEqual([rec("n", 2, 2), full]);
  });

  test("size 0 keeps nothing", () => {
    const log = new ActivityLog(0);
    log.push(rec("a", 1));
    expect(log.list()).toEqual([]);
  });
});

const TOML = (extra = "") =>
  `[server]\nlog_level = "error"\n${extra}\n${modelToml("m", up, 'aliases = ["mm"]')}${modelToml("n", up)}`;
const chat = (model: string) => ({ model, messages: [{ role: "user", content: "hi" }] });

describe("GET /api/requests", () => {
  test("newest first, filtered by model (an alias names its model), limited", async () => {
    const gw = fakeGateway(`${TOML()}\n[activity]\nsize = 2\n`);
    const app = appOf(gw);
    up.answer = () => completion({ content: "x" }, "stop");
    for (const model of ["m", "n", "m"])
      await (await post(app, "/v1/chat/completions", chat(model))).text();
    const all = await bodyOf(await call(app, "GET", "/api/requests"));
    expect(all.requests.map((r: RequestRecord) => r.model)).toEqual(["m", "n"]);
    expect(all.requests[0]).toMatchObject({ api: "openai", status: 200, prompt_tokens: 9 });
    const m = await bodyOf(await call(app, "GET", "/api/requests?model=mm&limit=5"));
    expect(m.requests.map((r: RequestRecord) => r.model)).toEqual(["m"]);
    const one = await bodyOf(await call(app, "GET", "/api/requests?limit=1"));
    expect(one.requests).toHaveLength(1);
  });

  test("a bad limit is a 400 naming it", async () => {
    const app = appOf(fakeGateway(TOML()));
    for (const bad of ["0", "-1", "x", "1.5", ""]) {
      const res = await call(app, "GET", `/api/requests?limit=${bad}`);
      expect({ bad, status: res.status }).toEqual({ bad, status: 400 });
      expect((await bodyOf(res)).error.param).toBe("limit");
    }
  });

  test("behind the API key; other methods get 405", async () => {
    const app = appOf(fakeGateway(TOML('api_keys = ["k"]')));
    expect((await call(app, "GET", "/api/requests")).status).toBe(401);
    const ok = await call(app, "GET", "/api/requests", null, { authorization: "Bearer k" });
    expect(ok.status).toBe(200);
    const wrong = await call(app, "POST", "/api/requests", null, { authorization: "Bearer k" });
    expect(wrong.status).toBe(405);
  });
});

describe("the runtime keeps and publishes each record", () => {
  test("in its log, and as a `request` event to subscribers", () => {
    const cfg = config(
      `[resources]\ngpu_probe = "off"\n[activity]\nsize = 5\n${modelToml("m", up)}`,
    );
    const timers = new FakeTimers();
    const rt = new Runtime(cfg, { clock: timers, timers, log: silentLogger });
    rt.record(rec("m", 1));
    const events: QmEvent[] = [];
    const off = rt.subscribe((e) => events.push(e));
    rt.record(rec("m", 2));
    off();
    expect(rt.activity.list().map((r) => r.time)).toEqual([2, 1]);
    expect(events).toEqual([{ type: "request", ...rec("m", 2, 2) }]);
  });
});
