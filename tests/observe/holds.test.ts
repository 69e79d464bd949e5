/**
 * Holds as the runtime hears them (`Effects.holdChanged`): counted per model in
 * `qm_holds_{granted,expired,preempted}_total` and published on `/api/events` as `hold`.
 */
import { expect, test } from "bun:test";
import type { QmEvent } from "../../src/api/gateway.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { fakeServers, settle } from "../runtime/fake-server.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { track } from "../support/track.ts";

/** Metrics are counted only while a listener serves them. */
const SERVED = "[server]\nmetrics_on_api = true\n";

const model = (id: string) =>
  [`[models.${id}]`, `cmd = "run ${id}"`, `proxy = "http://127.0.0.1:9"`, ""].join("\n");

const sample = (text: string, name: string, model: string) => {
  const m = new RegExp(`^${name}\\{model="${model}"\\} (\\S+)$`, "m").exec(text);
  return m ? Number(m[1]) : null;
};

/** A runtime on fake timers and servers, models a and b, with its `hold` events collected. */
function runtime(scheduler: string) {
  const cfg = config(
    `${SERVED}[resources]\ngpu_probe = "off"\n[scheduler]\nhold_ms = 10000\n${scheduler}\n\n${model("a")}${model("b")}`,
  );
  const timers = new FakeTimers();
  const fakes = fakeServers();
  const rt = new Runtime(cfg, {
    clock: timers,
    timers,
    log: silentLogger,
    makeProcess: fakes.make,
  });
  const events: QmEvent[] = [];
  rt.subscribe((e) => {
    if (e.type === "hold") events.push(e);
  });
  return { cfg, timers, fakes, rt, events };
}

test("holds granted, expired and preempted are counted and published as hold events", async () => {
  const { cfg, timers, fakes, rt, events } = runtime('hold_policy = "fixed"');
  const acquire = (id: string, patienceMs?: number) =>
    track(rt.acquire(cfg.models[id]!, new AbortController().signal, { patienceMs }));

  // a serves a tool-call answer: held for 10 s, which then runs out.
  const a1 = acquire("a");
  await settle();
  fakes.of("a").ready();
  await settle();
  a1.value!.release({ toolCalls: true });
  expect(events.map((e) => e.hold)).toEqual(["granted"]);
  const until = events[0]!.until_ms as number;
  expect(Math.abs(until - (Date.now() + 10_000))).toBeLessThan(1000);
  timers.advance(10_000);
  await settle();
  expect(events.map((e) => e.hold)).toEqual(["granted", "expired"]);
  // Wall-clock times: the deadline that passed is now (the fake clock moved, the wall clock not).
  expect(events[1]).toMatchObject({ type: "hold", model: "a", hold: "expired" });
  expect(Math.abs((events[1]!.until_ms as number) - Date.now())).toBeLessThan(1000);

  // Held again; an impatient request for b takes the GPU from it.
  const a2 = acquire("a");
  await settle();
  a2.value!.release({ toolCalls: true });
  const b = acquire("b", 1000);
  await settle();
  timers.advance(1000);
  await settle();
  expect(events.map((e) => `${e.model}:${e.hold}`)).toEqual([
    "a:granted",
    "a:expired",
    "a:granted",
    "a:preempted",
  ]);
  expect(b.error).toBeUndefined();

  const text = await rt.metrics.text();
  expect(sample(text, "qm_holds_granted_total", "a")).toBe(2);
  expect(sample(text, "qm_holds_expired_total", "a")).toBe(1);
  expect(sample(text, "qm_holds_preempted_total", "a")).toBe(1);
  expect(sample(text, "qm_holds_granted_total", "b")).toBeNull();
});

test('hold_policy = "cost": a hold dropped for a waiter is counted by reason and published with its figures', async () => {
  const { cfg, timers, fakes, rt, events } = runtime("");
  const acquire = (id: string) =>
    track(rt.acquire(cfg.models[id]!, new AbortController().signal, { conversation: `c-${id}` }));
  // a loads in 2 s (measured), serves a tool-call answer: held for hold_ms × 1.25 (no gap seen).
  const a1 = acquire("a");
  await settle();
  timers.advance(2000);
  fakes.of("a").ready();
  await settle();
  a1.value!.release({ toolCalls: true });
  expect(events.map((e) => e.hold)).toEqual(["granted"]);
  expect(events[0]).toMatchObject({ gap_ms: 10_000, swap_ms: 2000 });
  expect(rt.status().models.find((m) => m.id === "a")).toMatchObject({
    held_reason: "no gap measured yet (hold up to 12.5 s), swap 2.0 s",
    hold: { gap_ms: 10_000, window_ms: 12_500, swap_ms: 2000 },
  });
  // b waits while the gap so far is short: no gap measured yet, x more of it is expected and
  // 2x for b's own, against a 4 s round trip (less 5 %): 3x reaches 3.8 s at 1 267 ms, and the
  // hold is dropped then.
  const b = acquire("b");
  await settle();
  expect(events.map((e) => e.hold)).toEqual(["granted"]);
  timers.advance(1266);
  await settle();
  expect(events.map((e) => e.hold)).toEqual(["granted"]);
  timers.advance(1);
  await settle();
  expect(events.map((e) => e.hold)).toEqual(["granted", "dropped"]);
  expect(events[1]).toMatchObject({ model: "a", reason: "cost", gap_ms: 1267, swap_ms: 2000 });
  fakes.of("a").stopped();
  await settle();
  fakes.of("b").ready();
  await settle();
  expect(b.error).toBeUndefined();
  expect(rt.status().models.find((m) => m.id === "a")).toMatchObject({
    held_until_ms: null,
    held_reason: null,
    hold_ended: { how: "dropped", reason: "cost" },
  });
  const text = await rt.metrics.text();
  expect(text).toContain('qm_holds_dropped_total{model="a",reason="cost"} 1');
  expect(sample(text, "qm_holds_preempted_total", "a")).toBeNull();
});

test('hold_policy = "cost": once its loop has come back, a hold names the gap it expects', async () => {
  const { cfg, timers, fakes, rt, events } = runtime("");
  const acquire = (toolResult: boolean) =>
    track(
      rt.acquire(cfg.models.a!, new AbortController().signal, { conversation: "c-a", toolResult }),
    );
  const a1 = acquire(false);
  await settle();
  timers.advance(2000);
  fakes.of("a").ready();
  await settle();
  a1.value!.release({ toolCalls: true });
  // The loop comes back with its tool's result 3 s later: the gap is measured.
  timers.advance(3000);
  const a2 = acquire(true);
  await settle();
  a2.value!.release({ toolCalls: true });
  expect(events.map((e) => e.hold)).toEqual(["granted", "granted"]);
  expect(events[1]).toMatchObject({ gap_ms: 3000, swap_ms: 2000 });
  expect(rt.status().models.find((m) => m.id === "a")).toMatchObject({
    held_reason: "gap 3.0 s expected, swap 2.0 s",
    hold: { gap_ms: 3000, swap_ms: 2000 },
  });
});
