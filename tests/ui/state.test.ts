import { describe, expect, test } from "bun:test";
import {
  applyEvent,
  busy,
  type Dash,
  EMPTY,
  holdNote,
  loadElapsed,
  loadFraction,
  MAX_REQUESTS,
  withRequests,
  withStatus,
} from "../../src/ui/app/state.ts";
import type { ModelStatus, RequestRecord, Status } from "../../src/ui/app/wire.ts";

const model = (id: string, over: Partial<ModelStatus> = {}): ModelStatus => ({
  id,
  state: "stopped",
  inflight: 0,
  leases: 0,
  queued: 0,
  queue_positions: [],
  held_until_ms: null,
  est_vram_gb: 4,
  est_ram_gb: 0,
  pid: null,
  port: 10001,
  aliases: [],
  group: "default",
  ttl_s: 0,
  keep_alive_ms: null,
  unload_at_ms: null,
  concurrency_limit: 0,
  unlisted: false,
  last_error: null,
  load: null,
  last_load_ms: null,
  ...over,
});

const status = (...models: ModelStatus[]): Status => ({
  version: "0.1.0",
  uptime_s: 1,
  models,
  queue: { depth: 0 },
  swaps: [],
  resources: {
    vram_budget_gb: 24,
    vram_ceiling_gb: 23,
    vram_used_gb: 0,
    ram_budget_gb: 0,
    ram_used_gb: 0,
    probe: "off",
    gpu: null,
  },
});

const record = (model: string, time: number): RequestRecord => ({
  time,
  model,
  api: "openai",
  status: 200,
  answered: true,
  wait_ms: 0,
  swap: false,
  duration_ms: 10,
  ttft_ms: 5,
  prompt_tokens: 1,
  completion_tokens: 2,
  cached_tokens: null,
  finish_reason: "stop",
});

const ev = (event: string, data: unknown, id?: number) => ({
  event,
  data: typeof data === "string" ? data : JSON.stringify(data),
  id: id === undefined ? undefined : String(id),
});

const start = (): Dash => withStatus(EMPTY, status(model("a"), model("b")), 1000);

describe("the dashboard's state", () => {
  test("a status event replaces the status and needs no re-read", () => {
    const s = status(model("a", { state: "ready" }));
    const { dash, refetch } = applyEvent(start(), ev("status", s, 7), 2000);
    expect(dash.status).toEqual(s);
    expect(dash.lastEventId).toBe(7);
    expect(refetch).toBe(false);
  });

  test("a model event changes that model only, and asks for the figures", () => {
    const before = start();
    const { dash, refetch } = applyEvent(
      before,
      ev("model", { type: "model", model: "b", state: "ready", detail: null }, 3),
      2000,
    );
    expect(refetch).toBe(true);
    expect(dash.status!.models.map((m) => [m.id, m.state])).toEqual([
      ["a", "stopped"],
      ["b", "ready"],
    ]);
    expect(dash.status!.models[0]).toBe(before.status!.models[0]!);
    expect(dash.lastEventId).toBe(3);
    // The input is left as it was.
    expect(before.status!.models[1]!.state).toBe("stopped");
  });

  test("a config event (a reload) asks for the status afresh", () => {
    const before = start();
    const changes = { added: ["c"], removed: [], restart_pending: {}, updated: {} };
    const { dash, refetch } = applyEvent(
      before,
      ev("config", { type: "config", ok: true, changes }, 4),
      2000,
    );
    expect(refetch).toBe(true);
    expect(dash.status).toBe(before.status);
    expect(dash.lastEventId).toBe(4);
  });

  test("a hold event (granted, dropped, …) asks for the status: its deadline and why", () => {
    const before = start();
    const hold = { type: "hold", model: "a", hold: "dropped", until_ms: 5000, reason: "cost" };
    const { dash, refetch } = applyEvent(before, ev("hold", hold, 5), 2000);
    expect(refetch).toBe(true);
    expect(dash.status).toBe(before.status);
    expect(dash.lastEventId).toBe(5);
  });

  test("starting: the load begins now, with its expectation; progress ticks on", () => {
    const e = {
      type: "model",
      model: "a",
      state: "starting",
      detail: null,
      expected_load_ms: 4000,
    };
    const { dash } = applyEvent(start(), ev("model", e), 10_000);
    const a = dash.status!.models[0]!;
    expect(a.state).toBe("starting");
    expect(a.load).toEqual({ elapsed_ms: 0, expected_ms: 4000, progress: 0 });
    expect(loadFraction(dash, a, 11_000)).toBe(0.25);
    expect(loadElapsed(dash, a, 11_000)).toBe(1000);
    // Never 100% before it is ready.
    expect(loadFraction(dash, a, 99_000)).toBe(0.99);
    // Ready: the load is over.
    const ready = applyEvent(
      dash,
      ev("model", { model: "a", state: "ready", detail: null }),
      12_000,
    );
    expect(ready.dash.status!.models[0]!.load).toBeNull();
    expect(ready.dash.loadStart).toEqual({});
  });

  test("a first load has no expectation: no fraction, only the time so far", () => {
    const e = { model: "a", state: "starting", detail: null, expected_load_ms: null };
    const { dash } = applyEvent(start(), ev("model", e), 10_000);
    const a = dash.status!.models[0]!;
    expect(loadFraction(dash, a, 12_000)).toBeNull();
    expect(loadElapsed(dash, a, 12_000)).toBe(2000);
  });

  test("a status read during a load keeps when it began (by elapsed_ms at the first read)", () => {
    const loading = (elapsed: number) =>
      status(
        model("a", {
          state: "starting",
          load: { elapsed_ms: elapsed, expected_ms: 2000, progress: null },
        }),
      );
    const d1 = withStatus(EMPTY, loading(500), 10_000);
    expect(d1.loadStart).toEqual({ a: 9500 });
    const d2 = withStatus(d1, loading(1600), 11_000);
    expect(d2.loadStart).toEqual({ a: 9500 });
    expect(loadFraction(d2, d2.status!.models[0]!, 10_500)).toBe(0.5);
    expect(withStatus(d2, status(model("a", { state: "ready" })), 12_000).loadStart).toEqual({});
  });

  test("failed carries the reason; stopped and failed drop the pid", () => {
    const running = withStatus(EMPTY, status(model("a", { state: "ready", pid: 42 })), 0);
    const { dash } = applyEvent(
      running,
      ev("model", { model: "a", state: "failed", detail: "exit code 1" }),
      1,
    );
    expect(dash.status!.models[0]).toMatchObject({
      state: "failed",
      last_error: "exit code 1",
      pid: null,
    });
  });

  test("a request event goes first in the activity, bounded, and asks for the figures", () => {
    let d = withRequests(start(), [record("a", 1)]);
    const r = applyEvent(d, ev("request", { type: "request", ...record("b", 2) }, 9), 0);
    expect(r.refetch).toBe(true);
    expect(r.dash.requests).toEqual([record("b", 2), record("a", 1)]);
    for (let i = 0; i < MAX_REQUESTS + 5; i++)
      d = applyEvent(d, ev("request", record("a", i)), 0).dash;
    expect(d.requests.length).toBe(MAX_REQUESTS);
    expect(d.requests[0]!.time).toBe(MAX_REQUESTS + 4);
    expect(
      withRequests(EMPTY, new Array(MAX_REQUESTS + 1).fill(record("a", 0))).requests.length,
    ).toBe(MAX_REQUESTS);
  });

  test("junk and unknown events change nothing but the id", () => {
    const d = start();
    for (const e of [
      ev("model", "not json", 4),
      ev("model", "42", 4),
      ev("model", "null", 4),
      ev("swap", { x: 1 }, 4),
      { data: "{}", id: "4" },
    ]) {
      const r = applyEvent(d, e, 0);
      expect(r).toEqual({ dash: { ...d, lastEventId: 4 }, refetch: false });
    }
    // A model event for a model it does not know, or before any status.
    expect(applyEvent(d, ev("model", { model: "zz", state: "ready" }), 0).dash.status).toEqual(
      d.status,
    );
    expect(
      applyEvent(EMPTY, ev("model", { model: "a", state: "ready" }), 0).dash.status,
    ).toBeNull();
    // Ids that are not positive whole numbers are not kept.
    expect(applyEvent(d, { ...ev("x", {}), id: "abc" }, 0).dash.lastEventId).toBe(0);
    expect(applyEvent(d, { ...ev("x", {}), id: "-3" }, 0).dash.lastEventId).toBe(0);
  });

  test("busy while anything loads, stops, serves, waits or is prefetched", () => {
    expect(busy(null)).toBe(false);
    expect(busy(status(model("a"), model("b", { state: "ready" })))).toBe(false);
    expect(busy(status(model("a", { state: "starting" })))).toBe(true);
    expect(busy(status(model("a", { state: "ready", inflight: 1 })))).toBe(true);
    expect(busy(status(model("a", { queued: 2 })))).toBe(true);
    // Prefetch under way moves by itself; done (or none) does not.
    expect(busy(status(model("a", { prefetched: 0.4 })))).toBe(true);
    expect(busy(status(model("a", { prefetched: 1 }), model("b", { prefetched: null })))).toBe(
      false,
    );
  });
});

describe("event: load", () => {
  const startingAt = (now: number, expected: number | null) =>
    applyEvent(
      start(),
      ev("model", { model: "a", state: "starting", detail: null, expected_load_ms: expected }),
      now,
    ).dash;

  test("qm's reported progress (its log's stage) wins over the time when it is further", () => {
    const dash = startingAt(10_000, 10_000);
    const { dash: d, refetch } = applyEvent(
      dash,
      ev("load", {
        model: "a",
        elapsed_ms: 1000,
        expected_ms: 10_000,
        progress: 0.6,
        stage: "loading tensors",
      }),
      11_000,
    );
    expect(refetch).toBe(false);
    const a = d.status!.models[0]!;
    expect(a.load).toEqual({
      elapsed_ms: 1000,
      expected_ms: 10_000,
      progress: 0.6,
      stage: "loading tensors",
    });
    expect(loadFraction(d, a, 11_000)).toBe(0.6);
    // The time catches up and passes it.
    expect(loadFraction(d, a, 18_000)).toBe(0.8);
  });

  test("a first load with a stage has a fraction; a load event for a model not loading changes nothing", () => {
    const dash = startingAt(10_000, null);
    const load = { model: "a", elapsed_ms: 500, expected_ms: null, progress: 0.15, stage: "x" };
    const { dash: d } = applyEvent(dash, ev("load", load), 10_500);
    expect(loadFraction(d, d.status!.models[0]!, 10_500)).toBe(0.15);
    const stopped = start();
    expect(applyEvent(stopped, ev("load", load), 1).dash.status).toEqual(stopped.status);
  });
});

describe("holdNote", () => {
  const now = 1_800_000_000_000;
  test("while held, why (cost policy); held with no reason (fixed), nothing", () => {
    const why = "gap 2.1 s expected, swap 6.3 s";
    expect(holdNote(model("a", { held_until_ms: now + 5000, held_reason: why }), now)).toBe(why);
    expect(holdNote(model("a", { held_until_ms: now + 5000, held_reason: null }), now)).toBeNull();
  });
  test("after a hold, how it ended and how long ago, until the next one", () => {
    const ended = { how: "dropped", reason: "cost", at_ms: now - 12_000 };
    expect(holdNote(model("a", { hold_ended: ended }), now)).toBe("dropped: cost, 12s ago");
    // A hold whose deadline has just passed, before the status says how it ended.
    expect(holdNote(model("a", { held_until_ms: now - 1, held_reason: "x" }), now)).toBeNull();
    // A new hold: its reason, not the last one's end.
    const held = model("a", { held_until_ms: now + 1, held_reason: "r", hold_ended: ended });
    expect(holdNote(held, now)).toBe("r");
    expect(holdNote(model("a"), now)).toBeNull();
  });
});
