import { describe, expect, test } from "bun:test";
import type { Lease } from "../../src/api/gateway.ts";
import type { ModelConfig } from "../../src/config/types.ts";
import { Waiters } from "../../src/runtime/waiters.ts";
import type { RequestSpec } from "../../src/scheduler/types.ts";
import { QmError } from "../../src/shared/errors.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { track } from "../support/track.ts";
import { settle } from "./fake-server.ts";

const model = (id: string, port = 9) => ({ id, port }) as ModelConfig;

/** Waiters over a recording stand-in for the scheduler; `onRequest` may answer at once. */
function setup() {
  const clock = new FakeClock(1000);
  const log: string[] = [];
  const requests: RequestSpec[] = [];
  const current = new Map<string, ModelConfig>();
  const t = {
    clock,
    log,
    requests,
    current,
    onRequest: (_spec: RequestSpec) => {},
    waiters: null as unknown as Waiters,
  };
  t.waiters = new Waiters({
    clock,
    current: (m) => current.get(m.id) ?? m,
    events: {
      request: (spec) => {
        requests.push(spec);
        log.push(`request ${spec.id} ${spec.model}`);
        t.onRequest(spec);
      },
      cancel: (id) => log.push(`cancel ${id}`),
      serveDone: (id, outcome) => log.push(`serveDone ${id} ${outcome?.toolCalls ?? "-"}`),
    },
  });
  return t;
}

describe("waiters", () => {
  test("acquire → grant → release: one request, one lease, one serveDone", async () => {
    const t = setup();
    const p = t.waiters.acquire(model("a"), new AbortController().signal, {
      holdMs: 0,
      patienceMs: 50,
    });
    expect(t.requests).toEqual([{ id: 1, model: "a", holdMs: 0, patienceMs: 50 }]);
    t.clock.advance(250);
    expect(t.waiters.grant(1)).toBe(true);
    const lease = (await p) as Lease;
    expect(lease.waitedMs).toBe(250);
    lease.release({ toolCalls: true });
    lease.release({ toolCalls: false });
    expect(t.log).toEqual(["request 1 a", "serveDone 1 true"]);
  });

  test("the lease carries the model as configured at grant time (it may have moved port)", async () => {
    const t = setup();
    const p = t.waiters.acquire(model("a"), new AbortController().signal);
    t.current.set("a", model("a", 10042));
    t.waiters.grant(1);
    expect((await p).model.port).toBe(10042);
  });

  test("a failure rejects once; later effects for that request are ignored", async () => {
    const t = setup();
    const p = track(t.waiters.acquire(model("a"), new AbortController().signal));
    const err = new QmError("upstream_start_failed", 'model "a" exited while loading');
    t.waiters.fail(1, err);
    expect(t.waiters.grant(1)).toBe(false);
    t.waiters.fail(1, new QmError("internal", "twice"));
    await settle();
    expect(p).toEqual({ done: true, error: err });
  });

  test("a grant inside the request (served at once) resolves, and no abort listener stays", async () => {
    const t = setup();
    t.onRequest = (spec) => t.waiters.grant(spec.id);
    const ctrl = new AbortController();
    const lease = await t.waiters.acquire(model("a"), ctrl.signal);
    ctrl.abort();
    expect(t.log).toEqual(["request 1 a"]); // no cancel: it was never waiting
    lease.release();
    expect(t.log).toEqual(["request 1 a", "serveDone 1 -"]);
  });

  test("a client that leaves while waiting: cancelled (499), the scheduler told, a later grant refused", async () => {
    const t = setup();
    const ctrl = new AbortController();
    const p = track(t.waiters.acquire(model("a"), ctrl.signal));
    await settle();
    expect(p.done).toBe(false);
    ctrl.abort();
    await settle();
    expect(p.error).toMatchObject({ code: "cancelled", status: 499 });
    expect(t.log).toEqual(["request 1 a", "cancel 1"]);
    expect(t.waiters.grant(1)).toBe(false);
  });

  test("a client gone before it asked: rejected at once, nothing sent to the scheduler", async () => {
    const t = setup();
    const ctrl = new AbortController();
    ctrl.abort();
    const p = track(t.waiters.acquire(model("a"), ctrl.signal));
    await settle();
    expect(p.error?.message).toBe('the client went away while waiting for model "a"');
    expect(t.requests).toEqual([]);
  });

  test("positions and loading reach the waiting caller, and nobody once it is served", async () => {
    const t = setup();
    const heard: string[] = [];
    const p = t.waiters.acquire(model("a"), new AbortController().signal, {
      onPosition: (n) => heard.push(`position ${n}`),
      onLoading: () => heard.push("loading"),
    });
    t.waiters.position(1, 2);
    t.waiters.position(1, 1);
    t.waiters.position(1, 0);
    t.waiters.loading(1);
    t.waiters.grant(1);
    await p;
    t.waiters.position(1, 3);
    t.waiters.loading(1);
    expect(heard).toEqual(["position 2", "position 1", "position 0", "loading"]);
  });

  test("status reads each model's places in the line, front first, until they leave it", async () => {
    const t = setup();
    const gone = new AbortController();
    const signal = new AbortController().signal;
    const first = t.waiters.acquire(model("a"), signal);
    void t.waiters.acquire(model("b"), signal);
    const leaves = t.waiters.acquire(model("a"), gone.signal);
    void t.waiters.acquire(model("a"), signal);
    expect(t.waiters.positionsOf("a")).toEqual([]);
    t.waiters.position(4, 3);
    t.waiters.position(1, 1);
    t.waiters.position(2, 2);
    t.waiters.position(3, 4);
    expect(t.waiters.positionsOf("a")).toEqual([1, 3, 4]);
    expect(t.waiters.positionsOf("b")).toEqual([2]);
    // Out of the line to load (0), granted, or gone: no place.
    t.waiters.position(4, 0);
    t.waiters.grant(1);
    await first;
    gone.abort();
    expect(await leaves.catch((e: QmError) => e.code)).toBe("cancelled");
    expect(t.waiters.positionsOf("a")).toEqual([]);
    expect(t.waiters.positionsOf("b")).toEqual([2]);
  });

  test("each acquire is its own request", () => {
    const t = setup();
    const signal = new AbortController().signal;
    void t.waiters.acquire(model("a"), signal);
    void t.waiters.acquire(model("b"), signal);
    expect(t.requests.map((r) => [r.id, r.model])).toEqual([
      [1, "a"],
      [2, "b"],
    ]);
  });
});
