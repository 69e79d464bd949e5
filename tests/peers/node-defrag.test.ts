/**
 * A node's unload/reload cycles and its defrag restart (src/peers/mistralrs.md, "Defrag
 * restart"): a cycle is an unload qm made followed by a reload, so neither a user's unload nor
 * a request to a node that is down counts one; the restart runs as soon as the node drains;
 * after it the node is read before anything is loaded.
 */
import { describe, expect, test } from "bun:test";
import { FakeMistralrs } from "../support/fake-mistralrs.ts";
import { flush, nodeRuntime } from "./node-harness.ts";

/** A restart_cmd that restarts `fake` at once and records each run. */
function restarter(fake: FakeMistralrs) {
  const ran: string[][] = [];
  const run = async (argv: string[]) => {
    ran.push(argv);
    fake.restart();
    return 0;
  };
  return { ran, run };
}

const DEFRAG = `max_loaded = 1\ndefrag_after_cycles = 1\nrestart_cmd = "restart-node"`;

/** Node `n` with a and b, max_loaded 1, a restart after each cycle; polled once, a loaded. */
async function started() {
  const fake = new FakeMistralrs({ models: ["a", "b"] });
  const r = restarter(fake);
  const t = nodeRuntime(`models = ["a", "b"]\n${DEFRAG}`, fake, "", r.run);
  t.rt.start();
  await flush();
  (await t.up("n/a")).release();
  return { fake, r, t };
}

describe("defrag cycles", () => {
  test("NODE/MODEL while the node is down: no swap, nothing evicted, no cycle counted", async () => {
    const { fake, r, t } = await started();
    fake.down = true;
    await t.poll();
    const err = await t.refused("n/b");
    expect(err.status).toBe(503);
    expect(err.message).toContain('node "n" is down');
    // a was not evicted for a load that could not happen.
    expect(t.states()).toEqual({ a: "ready", b: "stopped" });
    expect(t.rt.status().swaps).toEqual([]);
    fake.down = false;
    await t.poll();
    await t.poll();
    expect(r.ran).toEqual([]);
    t.rt.beginShutdown();
  });

  test("a user's unload is no cycle: it never restarts the node", async () => {
    const { fake, r, t } = await started();
    (await t.up("n/b")).release(); // a unloaded for b: cycle 1 — the restart follows
    await t.drained();
    expect(r.ran).toEqual([["restart-node"]]);
    await flush();
    (await t.up("n/a")).release();
    t.rt.unload("n/a");
    await flush();
    await t.poll();
    expect(r.ran).toEqual([["restart-node"]]);
    expect(fake.calls.slice(-1)).toEqual(["unload a"]);
    t.rt.beginShutdown();
  });

  test("the restart runs once the last request drains, not a poll_s later", async () => {
    const { r, t } = await started();
    const busy = await t.up("n/b"); // cycle 1, but b is in flight
    await t.poll();
    expect(r.ran).toEqual([]);
    busy.release();
    await t.drained();
    expect(r.ran).toEqual([["restart-node"]]);
    t.rt.beginShutdown();
  });

  test("after a restart the node is read before anything loads: what it loaded at its start is adopted, pinned ones included", async () => {
    // p is loaded by the node's own config at each start.
    const fake = new FakeMistralrs({ models: ["a", "b", "p"], loaded: ["p"] });
    const r = restarter(fake);
    const t = nodeRuntime(
      `models = ["a", "b", "p"]\nmax_loaded = 2\npinned = ["p"]\ndefrag_after_cycles = 1\nrestart_cmd = "restart-node"`,
      fake,
      "",
      r.run,
    );
    t.rt.start();
    await flush();
    expect(t.state("n/p")).toBe("ready");
    (await t.up("n/a")).release();
    (await t.up("n/b")).release(); // a unloaded: cycle 1, then the restart
    await t.drained();
    expect(r.ran).toEqual([["restart-node"]]);
    await flush();
    // p came back with the node: adopted, not reloaded (a reload would answer not_found and
    // leave it stuck in `reloading`).
    expect(fake.calls).toEqual(["reload a", "unload a", "reload b"]);
    expect(fake.reloading.size).toBe(0);
    expect(t.states()).toEqual({ a: "stopped", b: "stopped", p: "ready" });
    (await t.up("n/b")).release();
    expect(fake.calls.slice(3)).toEqual(["reload b"]);
    t.rt.beginShutdown();
  });
});
