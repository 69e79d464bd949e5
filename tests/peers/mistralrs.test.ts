/**
 * Managed mistral.rs nodes in the runtime (src/peers/mistralrs.md): the real scheduler, waiters
 * and swap runner, a fake node answering over an injected fetch, fake timers. Nothing here waits
 * on real time: promises are let settle, and the fake clock moves only when a test says.
 */
import { describe, expect, test } from "bun:test";
import { Runtime } from "../../src/runtime/runtime.ts";
import { createLogger } from "../../src/shared/log.ts";
import { fakeServers } from "../runtime/fake-server.ts";
import { config } from "../support/config.ts";
import { FakeMistralrs } from "../support/fake-mistralrs.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { track } from "../support/track.ts";
import { flush, nodeRuntime } from "./node-harness.ts";

const setup = nodeRuntime;

describe("a managed mistral.rs node", () => {
  test("a request for NODE/MODEL reloads it on the node, waits until loaded, then is granted", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b"], asyncReload: true });
    let open = () => {};
    fake.gate = new Promise<void>((r) => {
      open = r;
    });
    const t = setup(`models = ["a", "b"]`, fake);
    const p = t.acquire("n/a");
    await flush();
    expect(fake.calls).toEqual(["reload a"]);
    expect(t.state("n/a")).toBe("starting");
    // The node says "reloading": qm asks how it goes every 250 ms.
    t.timers.advance(250);
    await flush();
    expect(fake.calls).toEqual(["reload a", "status a"]);
    expect(p.done).toBe(false);
    open();
    await flush();
    t.timers.advance(250);
    await flush();
    expect(p.value?.model.id).toBe("n/a");
    expect(t.state("n/a")).toBe("ready");
    expect(fake.keys).toEqual(new Set(["Bearer node-key"]));
    // The node's model is served at the node's URL, by the node's name for it.
    expect(p.value?.model).toMatchObject({ proxy: "http://n.test", useModelName: "a" });
    expect(t.rt.logs("n/a").join("\n")).toContain("reload → reloading");
  });

  test("LRU eviction over HTTP: the least recently used unpinned model is unloaded before a load that needs room", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b", "c"] });
    const t = setup(`models = ["a", "b", "c"]\nmax_loaded = 2`, fake);
    (await t.up("n/a")).release();
    (await t.up("n/b")).release();
    (await t.up("n/a")).release(); // a is now the most recently used
    (await t.up("n/c")).release();
    expect(fake.calls).toEqual(["reload a", "reload b", "unload b", "reload c"]);
    expect(fake.loaded().sort()).toEqual(["a", "c"]);
    expect(fake.peak).toBe(2);
    expect(t.state("n/b")).toBe("stopped");
  });

  test("a busy model is never unloaded: the load that needs its room waits for it to drain", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b"] });
    const t = setup(`models = ["a", "b"]\nmax_loaded = 1`, fake);
    const busy = await t.up("n/a");
    const b = t.acquire("n/b");
    await flush();
    expect(b.done).toBe(false);
    expect(fake.calls).toEqual(["reload a"]);
    busy.release();
    await flush();
    expect(fake.calls).toEqual(["reload a", "unload a", "reload b"]);
    expect(b.value?.model.id).toBe("n/b");
  });

  test("pinned models are never unloaded; a node they fill refuses with the numbers", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b"] });
    const t = setup(`models = ["a", "b"]\nmax_loaded = 1\npinned = ["a"]`, fake);
    (await t.up("n/a")).release();
    const b = t.acquire("n/b");
    await flush();
    expect(b.error?.code).toBe("cannot_fit");
    expect(b.error?.message).toContain("max_loaded");
    expect(fake.calls).toEqual(["reload a"]);
  });

  test("vram_budget_gb with est_vram_gb: residents go, least recently used first, until it fits", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b", "c"] });
    const t = setup(`vram_budget_gb = 20\nest_vram_gb = { a = 10, b = 6, c = 12 }`, fake);
    (await t.up("n/a")).release();
    (await t.up("n/b")).release();
    (await t.up("n/c")).release();
    expect(fake.calls).toEqual(["reload a", "reload b", "unload a", "reload c"]);
    // The node's memory is not this box's: status's own VRAM use counts none of it.
    expect(t.rt.status().resources.vram_used_gb).toBe(0);
    expect(t.rt.status().models.find((m) => m.id === "n/c")).toMatchObject({
      node: "n",
      est_vram_gb: 12,
    });
  });

  test("a model the node does not list fails naming the node (502, never reloaded); an unreachable node fails naming it", async () => {
    const fake = new FakeMistralrs({ models: ["a"] });
    const t = setup(`models = ["a", "ghost"]`, fake);
    const ghost = t.acquire("n/ghost");
    await flush();
    expect(ghost.error?.status).toBe(502);
    expect(ghost.error?.message).toBe(
      'node "n" does not list model "ghost" (GET /v1/models): model "n/ghost" cannot load there',
    );
    // A reload of an id it lacks would leave that id `reloading` on the node for good.
    expect(fake.calls).toEqual([]);
    fake.down = true;
    const a = t.acquire("n/a");
    await flush();
    expect(a.error?.status).toBe(502);
    expect(a.error?.message).toContain('node "n"');
    expect(a.error?.message).toContain("connection refused");
    // Down for routing at once, not only at the next poll.
    expect(t.rt.status().peers?.[0]).toMatchObject({ name: "n", state: "down" });
  });

  test("discovery: with models = [] the node's list joins the scheduler, and a bare name routes there", async () => {
    const fake = new FakeMistralrs({ models: ["x", "y"], loaded: ["y"] });
    const t = setup(``, fake);
    t.rt.start();
    await flush();
    expect(t.state("n/x")).toBe("stopped");
    // y was loaded on the node already: adopted, so its memory counts.
    expect(t.state("n/y")).toBe("ready");
    expect(t.rt.peers?.resolve("x")?.id).toBe("n/x");
    const lease = await t.up("x");
    expect(lease.model.id).toBe("n/x");
    lease.release();
    expect(t.rt.status().peers?.find((p) => p.name === "n")).toMatchObject({
      state: "up",
      kind: "mistralrs",
    });
    t.rt.beginShutdown();
    await t.rt.stopAll();
    // qm leaves the node's models as they are when it stops: the node is not its process.
    expect(fake.calls.filter((c) => c.startsWith("unload"))).toEqual([]);
    expect(t.timers.pending).toBe(0);
  });

  test("hostile lists: control bytes and over-long ids are passed over; a local model named NODE/MODEL stays local", async () => {
    const long = "x".repeat(300);
    const fake = new FakeMistralrs({ models: ["ok", "bad\u0000id", long, "mine"] });
    const t = setup(``, fake, `[models."n/mine"]\ncmd = "run"\nproxy = "http://127.0.0.1:9"\n`);
    t.rt.start();
    await flush();
    expect(
      t.rt
        .status()
        .models.map((m) => m.id)
        .sort(),
    ).toEqual(["n/mine", "n/ok"]);
    expect(t.rt.resolve("n/mine")?.node).toBeUndefined();
    t.rt.beginShutdown();
  });

  test("a model unloaded outside qm is stopped at the next poll, and the next request reloads it", async () => {
    const fake = new FakeMistralrs({ models: ["a"] });
    const t = setup(`models = ["a"]`, fake);
    t.rt.start();
    await flush();
    (await t.up("n/a")).release();
    fake.unloadOutside("a");
    t.timers.advance(5000);
    await flush();
    expect(t.state("n/a")).toBe("stopped");
    expect(t.log()).toContain("a was unloaded outside qm");
    (await t.up("n/a")).release();
    expect(fake.calls).toEqual(["reload a", "reload a"]);
    t.rt.beginShutdown();
  });

  test("a node that stops answering is down for routing, and up again once it answers", async () => {
    const fake = new FakeMistralrs({ models: ["a"] });
    const t = setup(`models = ["a"]`, fake);
    t.rt.start();
    await flush();
    fake.down = true;
    t.timers.advance(5000);
    await flush();
    expect(t.rt.status().peers?.[0]).toMatchObject({ name: "n", state: "down" });
    expect(() => t.rt.peers?.resolve("a")).toThrow(/peer "n" is down/);
    fake.down = false;
    t.timers.advance(5000);
    await flush();
    expect(t.rt.status().peers?.[0]?.state).toBe("up");
    expect(t.rt.peers?.resolve("a")?.id).toBe("n/a");
    t.rt.beginShutdown();
  });

  test("a bare name goes where the model is loaded, else to the node with the least to evict", async () => {
    const fakes = {
      n: new FakeMistralrs({ models: ["a", "b"] }),
      m: new FakeMistralrs({ models: ["a", "b"] }),
    };
    const cfg = config(
      `[resources]\ngpu_probe = "off"\n[peers.n]\nurl = "http://n.test"\nkind = "mistralrs"\nmodels = ["a", "b"]\nmax_loaded = 1\n[peers.m]\nurl = "http://m.test"\nkind = "mistralrs"\nmodels = ["a", "b"]\nmax_loaded = 2\n`,
    );
    const timers = new FakeTimers();
    const rt = new Runtime(cfg, {
      clock: timers,
      timers,
      log: createLogger("error", () => {}),
      makeProcess: fakeServers().make,
      nodeFetch: (url, init) =>
        (url.startsWith("http://n.test") ? fakes.n : fakes.m).fetch(url, init),
    });
    const up = async (id: string) => {
      const p = track(rt.acquire(rt.resolve(id)!, new AbortController().signal));
      await flush();
      p.value!.release();
    };
    await up("n/a");
    // a is ready on n: the bare name goes there.
    expect(rt.peers?.resolve("a")?.id).toBe("n/a");
    // b: n would have to unload a, m has room: m.
    expect(rt.peers?.resolve("b")?.id).toBe("m/b");
  });

  test("defrag: after N cycles, once idle, the node restarts; a request meanwhile waits, then is served", async () => {
    const fake = new FakeMistralrs({ models: ["a", "b", "p"] });
    const ran: string[][] = [];
    let finish = (_code: number) => {};
    const restart = (argv: string[]) => {
      ran.push(argv);
      return new Promise<number>((resolve) => {
        finish = (code) => {
          fake.restart();
          resolve(code);
        };
      });
    };
    const t = setup(
      `models = ["a", "b"]\nmax_loaded = 2\npinned = ["p"]\ndefrag_after_cycles = 2\nrestart_cmd = "systemctl restart mistralrs"`,
      fake,
      "",
      restart,
    );
    (await t.up("n/p")).release();
    (await t.up("n/a")).release();
    (await t.up("n/b")).release(); // cycle 1: a unloaded
    expect(ran).toEqual([]);
    t.rt.start();
    (await t.up("n/a")).release(); // cycle 2: b unloaded
    expect(ran).toEqual([]);
    // Idle now: the next poll restarts it.
    t.timers.advance(5000);
    await flush();
    expect(ran).toEqual([["systemctl", "restart", "mistralrs"]]);
    // The resident model was stopped through the scheduler, without an unload (the restart frees it).
    expect(t.state("n/a")).toBe("stopped");
    expect(t.state("n/p")).toBe("stopped");
    expect(fake.calls).toEqual([
      "reload p",
      "reload a",
      "unload a",
      "reload b",
      "unload b",
      "reload a",
    ]);
    const during = t.acquire("n/b");
    await flush();
    expect(during.done).toBe(false);
    expect(t.state("n/b")).toBe("starting");
    finish(0);
    await flush();
    expect(during.value?.model.id).toBe("n/b");
    expect(fake.restarts).toBe(1);
    expect(t.log()).toContain("node n: restarted");
    // The pinned model the restart took is loaded again.
    expect(t.state("n/p")).toBe("ready");
    expect(fake.calls.slice(6).sort()).toEqual(["reload b", "reload p"]);
    during.value!.release();
    t.rt.beginShutdown();
  });
});

describe("a managed node across a config reload", () => {
  test("discovered models stay while their node does; removing the node retires its models", async () => {
    const fake = new FakeMistralrs({ models: ["x"], loaded: ["x"] });
    const head = `[resources]\ngpu_probe = "off"\n`;
    const withNode = `${head}[peers.n]\nurl = "http://n.test"\nkind = "mistralrs"\n`;
    let text = withNode;
    const timers = new FakeTimers();
    const rt = new Runtime(config(text), {
      clock: timers,
      timers,
      log: createLogger("error", () => {}),
      makeProcess: fakeServers().make,
      nodeFetch: fake.fetch,
      loadConfig: (isPortFree) => config(text, { isPortFree }),
    });
    rt.start();
    await flush();
    expect(rt.modelState("n/x")).toBe("ready");
    // An unrelated change: the node and its discovered model are kept, still ready.
    text = `${withNode}[models.local]\ncmd = "run"\nproxy = "http://127.0.0.1:9"\n`;
    const kept = rt.reloadConfig();
    expect(kept.ok && kept.changes.removed).toEqual([]);
    expect(rt.modelState("n/x")).toBe("ready");
    text = head;
    const gone = rt.reloadConfig();
    expect(gone.ok && gone.changes.removed).toEqual(["n/x", "local"]);
    await flush();
    expect(rt.status().models.map((m) => m.id)).toEqual([]);
    expect(rt.peers).toBeNull();
    rt.beginShutdown();
    expect(timers.pending).toBe(0);
  });
});

test("a reload during a defrag keeps the node's state: the restart ends and requests waiting on it are served", async () => {
  const fake = new FakeMistralrs({ models: ["a", "b"] });
  const ran: string[][] = [];
  let finish = () => {};
  const node = (poll: number) =>
    `[resources]\ngpu_probe = "off"\n[peers.n]\nurl = "http://n.test"\nkind = "mistralrs"\nmodels = ["a", "b"]\nmax_loaded = 1\npoll_s = ${poll}\ndefrag_after_cycles = 2\nrestart_cmd = "restart-node"\n`;
  let text = node(5);
  const timers = new FakeTimers();
  const rt = new Runtime(config(text), {
    clock: timers,
    timers,
    log: createLogger("error", () => {}),
    makeProcess: fakeServers().make,
    nodeFetch: fake.fetch,
    runRestart: (argv) => {
      ran.push(argv);
      return new Promise<number>((resolve) => {
        finish = () => resolve(0);
      });
    },
    loadConfig: (isPortFree) => config(text, { isPortFree }),
  });
  rt.start();
  const up = async (id: string) => {
    const p = track(rt.acquire(rt.resolve(id)!, new AbortController().signal));
    await flush();
    p.value!.release();
  };
  await up("n/a");
  await up("n/b"); // cycle 1
  // A reload between the cycles keeps the count.
  text = node(2);
  expect(rt.reloadConfig().ok).toBe(true);
  await up("n/a"); // cycle 2
  timers.advance(2000);
  await flush();
  expect(ran).toEqual([["restart-node"]]);
  // Another reload while the restart runs; a request waits for it.
  text = node(3);
  expect(rt.reloadConfig().ok).toBe(true);
  const waiting = track(rt.acquire(rt.resolve("n/b")!, new AbortController().signal));
  await flush();
  expect(waiting.done).toBe(false);
  finish();
  await flush();
  expect(waiting.value?.model.id).toBe("n/b");
  waiting.value!.release();
  rt.beginShutdown();
});
