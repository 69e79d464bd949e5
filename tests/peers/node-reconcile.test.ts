/**
 * Following a managed node as mistral.rs 0.8.1 really answers (src/peers/mistralrs.md,
 * "Following the node"): a model loaded there between polls is adopted, never reloaded (its
 * `reload` would answer `not_found` and leave the id stuck in `reloading`); a model gone from
 * the list is gone; duplicate entries resolve the same in any order; ids left `reloading` by a
 * failed reload are not discovered; adoption keeps to `max_loaded` and the budget.
 */
import { describe, expect, test } from "bun:test";
import { FakeMistralrs } from "../support/fake-mistralrs.ts";
import { flush, nodeRuntime } from "./node-harness.ts";

describe("the node's models as it lists them", () => {
  test("a model loaded outside qm between polls is adopted at its request, never reloaded", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b"] });
    const t = nodeRuntime(`models = ["a", "b"]\npoll_s = 20`, fake);
    t.rt.start();
    await flush();
    fake.loadOutside("b");
    const lease = await t.up("n/b");
    expect(lease.model.id).toBe("n/b");
    lease.release();
    expect(fake.calls).toEqual([]);
    // Nothing stuck on the node, and b is counted as loaded.
    expect(fake.reloading.size).toBe(0);
    expect(t.state("n/b")).toBe("ready");
    expect(t.rt.logs("n/b").join("\n")).toContain("already loaded on the node");
    t.rt.beginShutdown();
  });

  test("a reload that finds the model loaded (not_found) re-reads the node and adopts it", async () => {
    const fake = new FakeMistralrs({ models: ["a"] });
    const t = nodeRuntime(`models = ["a"]`, fake);
    // Loaded by someone else just before qm's reload reaches the node.
    const real = fake.handle.bind(fake);
    fake.handle = async (req) => {
      if (new URL(req.url).pathname === "/v1/models/reload") fake.loadOutside("a");
      return real(req);
    };
    (await t.up("n/a")).release();
    expect(fake.calls).toEqual(["reload a"]);
    expect(t.state("n/a")).toBe("ready");
    t.rt.beginShutdown();
  });

  test("a model missing from the list is gone; its request is refused in qm's envelope, without a reload", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b"] });
    const t = nodeRuntime(`models = ["a", "b"]`, fake);
    t.rt.start();
    await flush();
    (await t.up("n/a")).release();
    fake.drop("a");
    await t.poll();
    expect(t.state("n/a")).toBe("stopped");
    expect(t.log()).toContain("a is no longer listed by the node");
    const err = await t.refused("n/a");
    expect(err.status).toBe(503);
    expect(err.message).toBe(
      'node "n" does not list model "a" (GET /v1/models): model "n/a" cannot load there',
    );
    expect(fake.calls).toEqual(["reload a"]);
    // No id left behind on the node by a reload of what it does not have.
    expect(fake.reloading.size).toBe(0);
    t.rt.beginShutdown();
  });

  test("a load that fails on the node is a 502 carrying the node's error text", async () => {
    const fake = new FakeMistralrs({ models: ["a"] });
    fake.loadError = "CUDA out of memory";
    const t = nodeRuntime(`models = ["a"]`, fake);
    const err = await t.refused("n/a");
    expect(err.status).toBe(502);
    expect(err.message).toBe(
      'node "n" could not load model "a" (internal_error: Failed to load model: CUDA out of memory)',
    );
    t.rt.beginShutdown();
  });

  test("duplicate entries resolve the same in either order: loaded wins over reloading", async () => {
    for (const order of ["reloading first", "loaded first"]) {
      const fake = new FakeMistralrs({
        models: ["x"],
        loaded: ["x"],
        ...(order === "loaded first" ? { extraEntries: [{ id: "x", status: "reloading" }] } : {}),
      });
      // The node lists its reloading ids first: a loaded model stuck there comes twice.
      if (order === "reloading first") fake.reloading.add("x");
      const t = nodeRuntime(``, fake);
      t.rt.start();
      await flush();
      expect({ order, state: t.state("n/x") }).toEqual({ order, state: "ready" });
      t.rt.beginShutdown();
    }
  });

  test("an id left reloading by a failed reload is not discovered until it settles", async () => {
    const fake = new FakeMistralrs({ models: ["a"] });
    // Someone reloaded an id the node never had: it stays `reloading` there.
    fake.reloading.add("phantom");
    const t = nodeRuntime(``, fake);
    t.rt.start();
    await flush();
    expect(Object.keys(t.states())).toEqual(["a"]);
    // Once it settles as a model the node has, it is found.
    fake.reloading.delete("phantom");
    fake.unloaded.add("phantom");
    await t.poll();
    expect(Object.keys(t.states()).sort()).toEqual(["a", "phantom"]);
    t.rt.beginShutdown();
  });
});

describe("adoption keeps to the node's limits", () => {
  test("max_loaded: the excess adopted is unloaded, least recently used first", async () => {
    // d unloaded on the list shows the node keeps loader configs: it can unload.
    const fake = new FakeMistralrs({ models: ["a", "b", "c", "d"], loaded: ["a", "b", "c"] });
    const t = nodeRuntime(`max_loaded = 1`, fake);
    t.rt.start();
    await flush();
    expect(fake.calls.sort()).toEqual(["unload a", "unload b"]);
    expect(fake.loaded()).toEqual(["c"]);
    expect(t.states()).toEqual({ a: "stopped", b: "stopped", c: "ready", d: "stopped" });
    t.rt.beginShutdown();
  });

  test("vram_budget_gb: the excess adopted is unloaded until the rest fits", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b", "c", "d"], loaded: ["a", "b", "c"] });
    const t = nodeRuntime(
      `vram_budget_gb = 10\nest_vram_gb = { a = 5, b = 5, c = 5, d = 5 }`,
      fake,
    );
    t.rt.start();
    await flush();
    expect(fake.calls).toEqual(["unload a"]);
    expect(t.states()).toEqual({ a: "stopped", b: "ready", c: "ready", d: "stopped" });
    t.rt.beginShutdown();
  });

  test("pinned models are not unloaded for it: the log says why the excess stays", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b", "c"], loaded: ["a", "b"] });
    const t = nodeRuntime(`max_loaded = 1\npinned = ["a", "b"]`, fake);
    t.rt.start();
    await flush();
    expect(fake.calls).toEqual([]);
    expect(t.states()).toEqual({ a: "ready", b: "ready", c: "stopped" });
    expect(t.log()).toContain(
      "node n: 2 models loaded, more than max_loaded = 1; pinned (n/a, n/b) are not unloaded",
    );
    t.rt.beginShutdown();
  });
});

test("a swap under way is no excess: its evictee is leaving, nothing else is unloaded for it", async () => {
  const fake = new FakeMistralrs({ models: ["a", "b", "c"] });
  const t = nodeRuntime(`models = ["a", "b", "c"]\nmax_loaded = 2`, fake);
  t.rt.start();
  await flush();
  (await t.up("n/a")).release();
  (await t.up("n/b")).release();
  // a's unload is slow to answer: a poll comes while a is leaving and c is waiting.
  let answer = () => {};
  fake.unloadGate = new Promise<void>((r) => {
    answer = r;
  });
  const c = t.acquire("n/c");
  await flush();
  await t.poll();
  fake.unloadGate = null;
  answer();
  await flush();
  expect(c.value?.model.id).toBe("n/c");
  expect(fake.calls).toEqual(["reload a", "reload b", "unload a", "reload c"]);
  expect(fake.loaded()).toEqual(["b", "c"]);
  t.rt.beginShutdown();
});
