/**
 * A managed node's unload that does not answer `unloaded` (src/peers/mistralrs.md, "A failed
 * unload"): stock `mistralrs from-config` serving answers `no_loader_config` and drops the
 * model. The stop failed: nothing is counted as freed, the load that needed the room is not
 * made, the node is re-read, and a node that cannot unload is never evicted from again.
 */
import { describe, expect, test } from "bun:test";
import { renderStatus } from "../../src/cli/status-table.ts";
import { FakeMistralrs } from "../support/fake-mistralrs.ts";
import { flush, nodeRuntime } from "./node-harness.ts";

const peerOf = (t: ReturnType<typeof nodeRuntime>) =>
  t.rt.status().peers?.find((p) => p.name === "n") as Record<string, unknown> | undefined;

describe("a node that cannot unload (no_loader_config)", () => {
  test("the eviction is not done: the load that needed its room is refused, and admission never evicts there again", async () => {
    // `a` was added without a loader config; `b` with one (unloaded on the node).
    const fake = new FakeMistralrs({ models: ["a", "b"], loaded: ["a"], noLoaderConfig: ["a"] });
    const t = nodeRuntime(`models = ["a", "b"]\nmax_loaded = 1`, fake);
    t.rt.start();
    await flush();
    expect(t.state("n/a")).toBe("ready");
    const first = await t.refused("n/b");
    expect(fake.calls).toEqual(["unload a"]);
    expect(first.status).toBe(503);
    expect(first.message).toContain('node "n" could not unload model "a" (no_loader_config)');
    // The node dropped `a` (its unload takes the engine out before it looks for the config).
    expect(fake.loaded()).toEqual([]);
    expect(t.log()).toContain("node n cannot unload models");
    expect(peerOf(t)).toMatchObject({ can_unload: false });
    // b was not loaded beside a model qm could not account as gone: nothing more was asked.
    await t.poll();
    expect(t.states()).toEqual({ a: "stopped", b: "failed" });
    // `a` is no longer on the node: its request is refused without touching the node.
    const again = await t.refused("n/a");
    expect(again.status).toBe(503);
    expect(again.message).toContain('node "n" does not list model "a"');
    expect(fake.calls).toEqual(["unload a"]);
    expect(fake.reloading.size).toBe(0);
    // b loads (nothing to evict now) and then the node is full: a third model cannot evict it.
    (await t.up("n/b")).release();
    expect(fake.calls).toEqual(["unload a", "reload b"]);
    t.rt.beginShutdown();
  });

  test("stock from-config serving: qm unload of one model drops it on the node; the others are never evicted for it", async () => {
    const fake = new FakeMistralrs({ models: ["alpha", "beta", "gamma"], noLoaderConfig: true });
    const t = nodeRuntime(`models = ["alpha", "beta", "gamma"]\nmax_loaded = 1`, fake);
    t.rt.start();
    await flush();
    // All three were loaded by the node at its start: adopted (the node's ability to unload is
    // not known yet, so qm does not unload the excess: it says why).
    expect(t.states()).toEqual({ alpha: "ready", beta: "ready", gamma: "ready" });
    expect(fake.calls).toEqual([]);
    expect(t.log()).toContain("more than max_loaded = 1");
    t.rt.unload("n/gamma");
    await flush();
    expect(fake.calls).toEqual(["unload gamma"]);
    expect(fake.loaded()).toEqual(["alpha", "beta"]);
    expect(peerOf(t)).toMatchObject({ can_unload: false });
    expect(renderStatus(t.rt.status())).toContain("n: cannot unload models (no_loader_config)");
    const gamma = await t.refused("n/gamma");
    expect(gamma.status).toBe(503);
    expect(gamma.message).toContain('does not list model "gamma"');
    // alpha and beta were not unloaded (they could never come back), nor gamma reloaded.
    expect(fake.calls).toEqual(["unload gamma"]);
    expect(fake.loaded()).toEqual(["alpha", "beta"]);
    expect(fake.reloading.size).toBe(0);
    (await t.up("n/alpha")).release();
    expect(t.states()).toEqual({ alpha: "ready", beta: "ready", gamma: "stopped" });
    // Once known, a user's unload sends nothing (it would drop the model): alpha stays, counted.
    t.rt.unload("n/alpha");
    await flush();
    expect(fake.calls).toEqual(["unload gamma"]);
    expect(fake.loaded()).toEqual(["alpha", "beta"]);
    expect(t.states()).toEqual({ alpha: "ready", beta: "ready", gamma: "stopped" });
    expect(t.rt.logs("n/alpha").join("\n")).toContain("the node cannot unload models");
    t.rt.beginShutdown();
  });

  test("an unload that answers unloaded proves the node can: can_unload turns true", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b"] });
    const t = nodeRuntime(`models = ["a", "b"]\nmax_loaded = 1`, fake);
    t.rt.start();
    await flush();
    // Unloaded models on the list already show it keeps loader configs.
    expect(peerOf(t)).toMatchObject({ can_unload: true });
    (await t.up("n/a")).release();
    (await t.up("n/b")).release();
    expect(fake.calls).toEqual(["reload a", "unload a", "reload b"]);
    expect(peerOf(t)).toMatchObject({ can_unload: true });
    t.rt.beginShutdown();
  });

  test("an unload the node never answered: the model is not counted as freed; the node's next answer adopts it back", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b"] });
    const t = nodeRuntime(`models = ["a", "b"]\nmax_loaded = 1`, fake);
    (await t.up("n/a")).release();
    // The unload's connection drops before the node saw it; then the node answers again.
    fake.cutNext.add("/v1/models/unload");
    const b = await t.refused("n/b");
    expect(b.message).toContain('could not unload model "a"');
    expect(fake.calls).toEqual(["reload a"]);
    // Re-read at once: still loaded there, so still counted.
    await flush();
    expect(t.states()).toEqual({ a: "ready", b: "failed" });
    expect(fake.loaded()).toEqual(["a"]);
    t.rt.beginShutdown();
  });
});
