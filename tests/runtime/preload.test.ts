/**
 * Preload at startup (src/runtime/preload.ts) over the real runtime, fake processes and fake
 * timers: order, the budget, never an eviction, requests meanwhile, and the status it shows.
 */
import { describe, expect, test } from "bun:test";
import { track } from "../support/track.ts";
import { settle } from "./fake-server.ts";
import { HEAD, model, runtimeHarness } from "./harness.ts";

const setup = (head: string, ...models: string[]) =>
  runtimeHarness(`${head}\n${HEAD.trim()}\nvram_budget_gb = 10\n\n${models.join("\n")}`);

describe("preload", () => {
  test("server list first, then preload = true in file order; one at a time; status follows", async () => {
    const t = setup(
      `[server]\npreload = ["c"]`,
      model("a", "est_vram_gb = 2", "preload = true"),
      model("b", "est_vram_gb = 2"),
      model("c", "est_vram_gb = 2", "preload = true"),
      model("d", "est_vram_gb = 2", "preload = true"),
    );
    expect(t.cfg.server.preload).toEqual(["c", "a", "d"]);
    expect(t.rt.status().preload).toEqual({
      pending: ["c", "a", "d"],
      loading: null,
      done: [],
      skipped: [],
    });
    const done = track(t.rt.startPreload());
    await settle();
    expect(t.fakes.of("c").state).toBe("starting");
    expect(t.fakes.of("a").state).toBe("stopped");
    expect(t.rt.status().preload).toMatchObject({ pending: ["a", "d"], loading: "c" });
    t.fakes.of("c").ready();
    await settle();
    expect(t.fakes.of("a").state).toBe("starting");
    t.fakes.of("a").ready();
    await settle();
    t.fakes.of("d").ready();
    await settle();
    expect(done.done).toBe(true);
    expect(t.rt.status().preload).toEqual({
      pending: [],
      loading: null,
      done: ["c", "a", "d"],
      skipped: [],
    });
    expect(t.fakes.of("b").state).toBe("stopped");
    // Loaded and idle: nothing holds them busy.
    for (const id of ["a", "c", "d"]) expect(t.rt.scheduler.inflightOf(id)).toBe(0);
  });

  test("a preload that does not fit is skipped with a log line and evicts no other preload", async () => {
    const t = setup(
      `[server]\npreload = ["a", "big", "b"]`,
      model("a", "est_vram_gb = 6"),
      model("big", "est_vram_gb = 8"),
      model("b", "est_vram_gb = 3"),
      model("huge", "est_vram_gb = 20", "preload = true"),
    );
    const done = track(t.rt.startPreload());
    await settle();
    t.fakes.of("a").ready();
    await settle();
    // big would need a's room: skipped, a untouched; b fits beside a.
    expect(t.fakes.of("big").starts).toBe(0);
    expect(t.fakes.of("a").stops).toBe(0);
    expect(t.fakes.of("b").state).toBe("starting");
    t.fakes.of("b").ready();
    await settle();
    await settle();
    expect(done.done).toBe(true);
    const status = t.rt.status().preload!;
    expect(status.done).toEqual(["a", "b"]);
    expect(status.skipped.map((s) => s.model)).toEqual(["big", "huge"]);
    expect(status.skipped[0]!.reason).toContain("a preload never evicts");
    expect(status.skipped[1]!.reason).toContain("cannot fit even alone");
    expect(t.log()).toContain("preload: skipped big");
    expect(t.fakes.of("huge").starts).toBe(0);
  });

  test("a request that arrives while a preload loads follows the decision tree; a failed start is skipped", async () => {
    const t = setup(
      `[server]\npreload = ["a", "b"]`,
      model("a", "est_vram_gb = 4"),
      model("b", "est_vram_gb = 4"),
      model("x", "est_vram_gb = 4"),
    );
    const done = track(t.rt.startPreload());
    await settle();
    expect(t.fakes.of("a").state).toBe("starting");
    // A request for x meanwhile: it fits beside a, so it starts at once, no waiting on preload.
    const req = track(t.rt.acquire(t.cfg.models.x!, new AbortController().signal));
    await settle();
    expect(t.fakes.of("x").state).toBe("starting");
    t.fakes.of("x").ready();
    await settle();
    expect(req.value?.model.id).toBe("x");
    const { QmError } = await import("../../src/shared/errors.ts");
    t.fakes
      .of("a")
      .failStart(new QmError("upstream_start_failed", 'model "a" could not be started'));
    await settle();
    // b still fits beside x (4 + 4 ≤ 10): loaded.
    expect(t.fakes.of("b").state).toBe("starting");
    t.fakes.of("b").ready();
    await settle();
    await settle();
    expect(done.done).toBe(true);
    const status = t.rt.status().preload!;
    expect(status.done).toEqual(["b"]);
    expect(status.skipped).toEqual([{ model: "a", reason: 'model "a" could not be started' }]);
    req.value!.release();
  });

  test("no preload configured: status has no preload and startPreload does nothing", async () => {
    const t = setup("", model("a"));
    expect(t.rt.status().preload).toBeUndefined();
    await t.rt.startPreload();
    expect(t.fakes.of("a").starts).toBe(0);
  });
});
