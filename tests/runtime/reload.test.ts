/**
 * A config reload in the runtime: the real scheduler, waiters and swap runner over fake model
 * processes and fake timers; each reload loads its text through the real loader.
 */
import { describe, expect, test } from "bun:test";
import { track } from "../support/track.ts";
import { settle } from "./fake-server.ts";
import { HEAD, model, setup } from "./reload-support.ts";

describe("config reload in the runtime", () => {
  test("an unchanged running model survives a reload untouched (same process, same lease)", async () => {
    const t = setup(model("a"), model("b"));
    const lease = await t.up("a");
    const fake = t.fakes.of("a");
    const pid = fake.pid;
    const out = t.reload(model("a"), model("b", "ttl_s = 30"));
    expect(out.ok).toBe(true);
    await settle();
    expect(t.fakes.of("a")).toBe(fake);
    expect(fake.pid).toBe(pid);
    expect(fake.starts).toBe(1);
    expect(fake.stops).toBe(0);
    expect(t.status("a")).toMatchObject({ state: "ready", inflight: 1, restart_pending: false });
    expect(t.status("b")!.ttl_s).toBe(30);
    lease.release();
    await settle();
    expect(t.status("a")!.inflight).toBe(0);
  });

  test("a changed model keeps serving on its old process, then starts with the new cmd", async () => {
    const t = setup(model("a"));
    const lease = await t.up("a");
    const old = t.fakes.of("a");
    const out = t.reload(model("a").replace("run a", "run a --new"));
    expect(out).toMatchObject({ ok: true, changes: { restart_pending: { a: ["cmd"] } } });
    expect(t.status("a")).toMatchObject({ state: "ready", restart_pending: true, pid: old.pid });
    // Still served by the old process: a second request is granted at once.
    const second = t.acquire("a");
    await settle();
    expect(second.value).toBeDefined();
    expect(t.fakes.of("a")).toBe(old);
    second.value!.release();
    lease.release();
    t.rt.unload("a");
    await settle();
    old.stopped();
    await settle();
    expect(t.status("a")).toMatchObject({ state: "stopped", restart_pending: false });
    const again = t.acquire("a");
    await settle();
    const fresh = t.fakes.of("a");
    expect(fresh).not.toBe(old);
    expect(fresh.model.argv).toEqual(["run", "a", "--new"]);
    fresh.ready();
    await settle();
    expect(again.value).toBeDefined();
    again.value!.release();
  });

  test("a sleeping model whose cmd changed is stopped, and its next request starts the new cmd", async () => {
    const t = setup(model("a", 'evict = "sleep"', "ttl_s = 5"));
    (await t.up("a")).release();
    const old = t.fakes.of("a");
    t.timers.advance(5000);
    await settle();
    expect(t.status("a")!.state).toBe("sleeping");
    t.reload(model("a", 'evict = "sleep"', "ttl_s = 5").replace("run a", "run a4"));
    await settle();
    expect(old.state).toBe("stopping"); // not woken on the old process
    old.stopped();
    await settle();
    expect(t.status("a")).toMatchObject({ state: "stopped", restart_pending: false });
    await t.up("a");
    expect(t.fakes.of("a")).not.toBe(old);
    expect(old.wakes).toBe(0);
    expect(t.fakes.of("a").model.argv).toEqual(["run", "a4"]);
  });

  test("a changed model that crashes comes back with its new config", async () => {
    const t = setup(model("a"));
    (await t.up("a")).release();
    const old = t.fakes.of("a");
    t.reload(model("a").replace("run a", "run a3"));
    expect(t.status("a")!.restart_pending).toBe(true);
    old.crash();
    await settle();
    expect(t.status("a")).toMatchObject({ state: "failed", restart_pending: false });
    await t.up("a");
    expect(t.fakes.of("a")).not.toBe(old);
    expect(t.fakes.of("a").model.argv).toEqual(["run", "a3"]);
  });

  test("a removed model with a lease stops once the lease expires", async () => {
    const t = setup(model("a"), model("b"));
    const p = track(t.rt.lease(t.rt.resolve("a")!, new AbortController().signal, 5000));
    await settle();
    t.fakes.of("a").ready();
    await settle();
    expect(p.value).toBeDefined();
    t.reload(model("b"));
    await settle();
    expect(t.fakes.of("a").stops).toBe(0);
    t.timers.advance(5000);
    await settle();
    expect(t.fakes.of("a").state).toBe("stopping");
  });

  test("a changed model that is stopped takes its new config at once", async () => {
    const t = setup(model("a"));
    t.reload(model("a").replace("run a", "run a2"));
    expect(t.status("a")!.restart_pending).toBe(false);
    await t.up("a");
    expect(t.fakes.of("a").model.argv).toEqual(["run", "a2"]);
  });

  test("a removed busy model finishes its request, then stops; new requests find no model", async () => {
    const t = setup(model("a"), model("b"));
    const lease = await t.up("a");
    const fake = t.fakes.of("a");
    const out = t.reload(model("b"));
    expect(out).toMatchObject({ ok: true, changes: { removed: ["a"] } });
    expect(t.rt.resolve("a")).toBeUndefined();
    await settle();
    expect(fake.stops).toBe(0);
    expect(t.status("a")).toMatchObject({ state: "ready", inflight: 1 });
    lease.release();
    await settle();
    expect(fake.state).toBe("stopping");
    fake.stopped();
    await settle();
    expect(t.status("a")).toBeUndefined();
    expect(t.rt.process("a")).toBeUndefined();
  });

  test("a removed idle model stops at once", async () => {
    const t = setup(model("a"), model("b"));
    (await t.up("a")).release();
    await settle();
    t.reload(model("b"));
    await settle();
    expect(t.fakes.of("a").state).toBe("stopping");
    t.fakes.of("a").stopped();
    await settle();
    expect(t.status("a")).toBeUndefined();
  });

  test("a removed model that is not running is forgotten at once", () => {
    const t = setup(model("a"), model("b"));
    t.reload(model("b"));
    expect(t.status("a")).toBeUndefined();
    expect(t.rt.process("a")).toBeUndefined();
    expect(t.rt.resolve("a")).toBeUndefined();
  });

  test("a removed model added back while still running keeps its process", async () => {
    const t = setup(model("a"), model("b"));
    const lease = await t.up("a");
    const fake = t.fakes.of("a");
    t.reload(model("b"));
    t.reload(model("a"), model("b"));
    expect(t.rt.resolve("a")).toBeDefined();
    expect(t.rt.process("a")).toBe(fake);
    expect(t.status("a")).toMatchObject({ state: "ready", inflight: 1, restart_pending: false });
    lease.release();
    await settle();
    expect(fake.stops).toBe(0);
    expect(t.status("a")).toMatchObject({ state: "ready", inflight: 0 });
  });

  test("an added model serves at once, under its alias too", async () => {
    const t = setup(model("a"));
    expect(t.rt.resolve("c")).toBeUndefined();
    const out = t.reload(model("a"), model("c", 'aliases = ["cee"]'));
    expect(out).toMatchObject({ ok: true, changes: { added: ["c"] } });
    expect(t.rt.resolve("cee")?.id).toBe("c");
    const lease = await t.up("cee");
    expect(t.status("c")).toMatchObject({ state: "ready", inflight: 1 });
    lease.release();
  });

  test("a bad config is a no-op that names file, line and column", async () => {
    const t = setup(model("a"));
    const lease = await t.up("a");
    const before = JSON.stringify(t.rt.config.models);
    const out = t.reloadText(`${HEAD}${model("a")}\n[models.b]\ncmd = "x"\nttl_s = "soon"\n`);
    expect(out.ok).toBe(false);
    if (out.ok) return;
    expect(out.error).toMatch(/^test\.toml:\d+:\d+: /);
    expect(out.error).toContain("ttl_s");
    expect(JSON.stringify(t.rt.config.models)).toBe(before);
    expect(t.rt.resolve("b")).toBeUndefined();
    expect(t.status("a")).toMatchObject({ state: "ready", inflight: 1 });
    expect(t.log()).toContain("config reload failed, nothing changed");
    expect(t.events.at(-1)).toMatchObject({ type: "config", ok: false });
    lease.release();
  });

  test("concurrency_limit applies to the next request", async () => {
    const t = setup(model("a", "concurrency_limit = 1"));
    const first = await t.up("a");
    const queued = t.acquire("a");
    await settle();
    expect(queued.done).toBe(false);
    t.reload(model("a", "concurrency_limit = 2"));
    await settle();
    expect(queued.value).toBeDefined();
    first.release();
    queued.value!.release();
  });

  test("event: config carries the change summary", () => {
    const t = setup(model("a"));
    t.reload(model("a", "ttl_s = 5"));
    expect(t.events.at(-1)).toMatchObject({
      type: "config",
      ok: true,
      changes: { updated: { a: ["ttl_s"] }, needs_restart: [] },
    });
  });

  test("listener changes are not applied and the log says a restart is needed", () => {
    const t = setup(model("a"));
    const out = t.reloadText(`[server]\nlisten = ["127.0.0.1:1"]\n${HEAD}${model("a")}`);
    expect(out).toMatchObject({ ok: true, changes: { needs_restart: ["server.listen"] } });
    expect(t.rt.config.server.listen).toEqual(["127.0.0.1:8080"]);
    expect(t.log()).toContain("needs a restart: server.listen");
  });

  test("the new peers are stored on the runtime and its listeners hear them", () => {
    const t = setup(model("a"));
    const heard: string[][] = [];
    t.rt.reloads.subscribe((c, cfg) => {
      if (c.peers) heard.push(Object.keys(cfg.peers));
    });
    t.reloadText(
      `${HEAD}${model("a")}\n[peers.box2]\nurl = "http://10.0.0.2:8080"\nkind = "openai"\nmodels = ["m"]\n`,
    );
    expect(heard).toEqual([["box2"]]);
    expect(t.rt.config.peers.box2?.url).toBe("http://10.0.0.2:8080");
  });

  test("a reload that changes [peers] routes to the new ones at once, and to none once removed", () => {
    const t = setup(model("a"));
    expect(t.rt.peers).toBeNull();
    const peer = (url: string) =>
      `${HEAD}${model("a")}\n[peers.box2]\nurl = "${url}"\nkind = "openai"\nmodels = ["m"]\n`;
    t.reloadText(peer("http://10.0.0.2:8080"));
    expect(t.rt.peers?.resolve("m")?.proxy).toBe("http://10.0.0.2:8080");
    expect(t.rt.status().peers?.map((p) => p.name)).toEqual(["box2"]);
    t.reloadText(peer("http://10.0.0.3:8080"));
    expect(t.rt.peers?.resolve("m")?.proxy).toBe("http://10.0.0.3:8080");
    t.reloadText(`${HEAD}${model("a")}`);
    expect(t.rt.peers).toBeNull();
    expect(t.rt.status().peers).toBeUndefined();
  });

  test("a port move is the registry's: the reloaded keys stay, the config is not rewritten, a removed model stays removed", () => {
    const t = setup(model("a"), model("b"));
    t.reload(model("a", "ttl_s = 77"));
    const configured = t.rt.config.models.a!;
    const supervisors = t.fakes.of("a").model; // what the supervisor was made with (ttl_s 0)
    t.rt.registry.move({ ...supervisors, port: 4321, proxy: "http://127.0.0.1:4321" });
    expect(t.rt.config.models.a).toBe(configured);
    expect(t.rt.config.models.a!.port).not.toBe(4321);
    expect(t.rt.resolve("a")).toMatchObject({
      port: 4321,
      proxy: "http://127.0.0.1:4321",
      ttlS: 77,
    });
    expect(t.status("a").port).toBe(4321);
    t.rt.registry.move({ ...t.fakes.of("b").model, port: 4322 });
    expect(t.rt.config.models.b).toBeUndefined();
    expect(t.rt.resolve("b")).toBeUndefined();
  });

  test("a moved model's new supervisor (its changed cmd) starts where its config says", async () => {
    const t = setup(model("a"));
    t.rt.registry.move({ ...t.fakes.of("a").model, port: 4321, proxy: "http://127.0.0.1:4321" });
    expect(t.rt.resolve("a")!.port).toBe(4321);
    // Down, and its cmd changed: a new supervisor at once, the move forgotten.
    t.reload(model("a").replace("run a", "run a --new"));
    expect(t.rt.resolve("a")!.port).toBe(t.rt.config.models.a!.port);
    expect(t.rt.registry.ports()).toEqual([]);
  });

  test('a reload to vram_budget_gb = "auto" tells the GPU watch; back to a number, no longer', () => {
    const t = setup(model("a"));
    expect(t.rt.config.resources.vramBudgetAuto).toBeUndefined();
    t.reloadText(`[resources]\ngpu_probe = "off"\nvram_budget_gb = "auto"\n\n${model("a")}`);
    expect(t.rt.config.resources.vramBudgetAuto).toBe(true);
    t.reloadText(`[resources]\ngpu_probe = "off"\nvram_budget_gb = 12\n\n${model("a")}`);
    expect(t.rt.config.resources.vramBudgetAuto).toBeUndefined();
    expect(t.rt.status().resources.vram_budget_gb).toBe(12);
  });

  test("a budget set by a reload governs the next decision", async () => {
    const group = `[groups.g]\nmembers = ["a", "b"]\nswap = false\n\n`;
    const a = model("a", "est_vram_gb = 8");
    const b = model("b", "est_vram_gb = 8");
    const t = setup(group, a, b);
    (await t.up("a")).release();
    await settle();
    t.reloadText(`[resources]\ngpu_probe = "off"\nvram_budget_gb = 10\n\n${group}${a}\n${b}`);
    expect(t.rt.status().resources.vram_budget_gb).toBe(10);
    expect(t.rt.status().resources.vram_ceiling_gb).toBe(10);
    t.acquire("b");
    await settle();
    expect(t.fakes.of("a").state).toBe("stopping");
  });
});
