/**
 * The runtime in-process: the real scheduler, waiters, swap runner, lease book and wake timer,
 * over fake model processes and fake timers. No process, no socket, no sleep.
 */

import { describe, expect, test } from "bun:test";
import type { QmEvent } from "../../src/api/gateway.ts";
import { Deadline } from "../../src/proxy/deadline.ts";
import { QmError } from "../../src/shared/errors.ts";
import { settle } from "./fake-server.ts";
import { HEAD, model, runtimeHarness } from "./harness.ts";

const setup = (...models: string[]) => runtimeHarness(HEAD + models.join("\n"));

/** Runs the microtasks queued now (and those they queue), within this turn of the event loop. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

function thrown(fn: () => unknown): QmError {
  try {
    fn();
  } catch (err) {
    return err as QmError;
  }
  throw new Error("expected a throw");
}

describe("requests", () => {
  test("acquire starts the model, the grant comes once it is ready, release ends it once", async () => {
    const t = setup(model("a"));
    const heard: string[] = [];
    const p = t.acquire("a", { onLoading: () => heard.push("loading") });
    await settle();
    expect(t.fakes.of("a").state).toBe("starting");
    expect(t.rt.modelState("a")).toBe("starting");
    expect(heard).toEqual(["loading"]);
    t.timers.advance(250);
    t.fakes.of("a").ready();
    await settle();
    expect(p.value?.waitedMs).toBe(250);
    expect(t.status("a")).toMatchObject({ state: "ready", inflight: 1, pid: t.fakes.of("a").pid });
    p.value?.release();
    p.value?.release();
    expect(t.status("a").inflight).toBe(0);
    const again = t.acquire("a");
    await settle();
    expect(again.value?.waitedMs).toBe(0); // ready: served at once
    expect(t.fakes.of("a").starts).toBe(1);
  });

  test("a cold stream's announcement goes out before the spawn; a request told nothing starts at once", async () => {
    const t = setup(model("a"));
    const heard: string[] = [];
    t.acquire("a", { onLoading: () => heard.push("loading") });
    await microtasks();
    // Told, and not started: the spawn waits for the event loop's next turn, after the
    // placeholder's bytes have been written.
    expect(heard).toEqual(["loading"]);
    expect(t.fakes.of("a").starts).toBe(0);
    await settle();
    expect(t.fakes.of("a").starts).toBe(1);
    const quiet = setup(model("a"));
    quiet.acquire("a");
    await microtasks();
    expect(quiet.fakes.of("a").starts).toBe(1);
  });

  test("a stream that joins a load already under way leaves no mark: the next swap starts at once", async () => {
    const apart = (id: string) => `[groups.${id}]\nmembers = ["${id}"]\nexclusive = false\n`;
    const t = setup(apart("a"), apart("b"), model("a"), model("b"));
    const heard: string[] = [];
    t.acquire("a", { onLoading: () => heard.push("first") });
    await settle();
    t.acquire("a", { onLoading: () => heard.push("joined") });
    await microtasks();
    expect(heard).toEqual(["first", "joined"]);
    t.acquire("b");
    await microtasks();
    expect(t.fakes.of("b").starts).toBe(1);
  });

  test("queued callers hear their positions; each released slot serves the next", async () => {
    const t = setup(model("a", "concurrency_limit = 1"));
    const first = await t.up("a");
    const heard = { 2: [] as number[], 3: [] as number[] };
    const second = t.acquire("a", { onPosition: (n) => heard[2].push(n) });
    const third = t.acquire("a", { onPosition: (n) => heard[3].push(n) });
    await settle();
    expect(heard).toEqual({ 2: [1], 3: [2] });
    expect(t.rt.status().queue.depth).toBe(2);
    expect(t.status("a")).toMatchObject({ queued: 2, queue_positions: [1, 2] });
    first.release();
    await settle();
    expect(second.value).toBeDefined();
    expect(third.done).toBe(false);
    expect(heard).toEqual({ 2: [1], 3: [2, 1] });
    expect(t.status("a")).toMatchObject({ queued: 1, queue_positions: [1] });
    second.value?.release();
    await settle();
    expect(third.value).toBeDefined();
    expect(t.rt.status().queue.depth).toBe(0);
  });

  test("a client that leaves while its model loads: cancelled, nothing counted, the load goes on", async () => {
    const t = setup(model("a"));
    const ctrl = new AbortController();
    const p = t.acquire("a", {}, ctrl.signal);
    await settle();
    ctrl.abort();
    await settle();
    expect(p.error).toMatchObject({ code: "cancelled", status: 499 });
    expect(t.status("a")).toMatchObject({ state: "starting", queued: 0 });
    t.fakes.of("a").ready();
    await settle();
    expect(t.status("a")).toMatchObject({ state: "ready", inflight: 0 });
  });
});

describe("where a model runs", () => {
  test("a move at its start reaches the lease (and so the proxy); the loaded config stays as it was", async () => {
    const t = setup(model("a"));
    const configured = t.rt.config.models.a!;
    const p = t.acquire("a");
    await settle();
    // The supervisor found its port taken and moved the model (src/process/port-guard.ts).
    t.rt.registry.move({ ...t.fakes.of("a").model, port: 4321, proxy: "http://127.0.0.1:4321" });
    t.fakes.of("a").ready();
    await settle();
    expect(p.value!.model.proxy).toBe("http://127.0.0.1:4321");
    expect(t.rt.config.models.a).toBe(configured);
    expect(configured.proxy).toBe("http://127.0.0.1:9");
    expect(t.status("a").port).toBe(4321);
    p.value!.release();
  });
});

describe("failures", () => {
  test("a crash while loading fails every waiter of that start with the exit report", async () => {
    const t = setup(model("a"));
    const one = t.acquire("a");
    const two = t.acquire("a");
    await settle();
    t.fakes.of("a").stderr = ["loading weights", "error: bad gguf"];
    t.fakes.of("a").crash({ code: 1 });
    await settle();
    const message =
      'model "a" exited while loading (exit code 1): error: bad gguf; its output is at /api/models/a/logs';
    for (const p of [one, two]) {
      expect(p.error).toMatchObject({ code: "upstream_start_failed", status: 502, message });
      expect(p.error?.exit).toEqual({
        model: "a",
        code: 1,
        signal: null,
        stderrTail: ["loading weights", "error: bad gguf"],
      });
    }
    expect(t.status("a")).toMatchObject({ state: "failed", last_error: message });
    expect(t.log()).toContain('model "a": last stderr lines:\n  | loading weights');
    expect(t.log()).toContain("command: run a");
  });

  test("a start failure without an exit (a command that cannot run) fails its waiters", async () => {
    const t = setup(model("a"));
    const p = t.acquire("a");
    await settle();
    const err = new QmError("upstream_start_failed", 'model "a" could not be started: not found', {
      detail: "command: run a",
    });
    t.fakes.of("a").failStart(err);
    await settle();
    expect(p.error).toBe(err);
    expect(t.status("a").state).toBe("failed");
    expect(t.log()).toContain('model "a": command: run a');
  });

  test("a crash of a ready model: failed with the exit report, its in-flight forgotten, the queue restarts it", async () => {
    const t = setup(model("a", "concurrency_limit = 1"));
    const events: QmEvent[] = [];
    t.rt.subscribe((e) => events.push(e));
    const inflight = await t.up("a");
    const queued = t.acquire("a");
    await settle();
    t.fakes.of("a").crash({ code: null, signal: "SIGSEGV" });
    await settle();
    const message =
      'model "a" exited unexpectedly (signal SIGSEGV); its output is at /api/models/a/logs';
    expect(events).toContainEqual({ type: "model", model: "a", state: "failed", detail: message });
    // The queued caller is not failed: it starts the model again.
    expect(t.fakes.of("a").starts).toBe(2);
    expect(t.status("a")).toMatchObject({ state: "starting", last_error: message });
    t.fakes.of("a").ready();
    await settle();
    expect(queued.value).toBeDefined();
    inflight.release(); // ran on the dead process: it no longer counts
    expect(t.status("a")).toMatchObject({ state: "ready", inflight: 1 });
  });
});

describe("unload", () => {
  test("a leased model: 409 conflict naming the lease; forced, the lease is revoked and it stops", async () => {
    const t = setup(model("a"));
    const info = await t.lease("a", 60_000);
    for (const id of ["a", null]) {
      const err = thrown(() => t.rt.unload(id));
      expect(err).toMatchObject({ code: "conflict", status: 409 });
      expect(err.message).toContain(`${info.lease} on "a"`);
    }
    expect(t.status("a")).toMatchObject({ state: "ready", inflight: 1, leases: 1 });
    t.rt.unload("a", { force: true });
    expect(t.status("a")).toMatchObject({ state: "stopping", inflight: 0, leases: 0 });
    expect(t.log()).toContain(`lease ${info.lease} on "a" revoked by a forced unload`);
    t.fakes.of("a").stopped();
    await settle();
    expect(t.status("a").state).toBe("stopped");
    expect(thrown(() => t.rt.renewLease("a", info.lease)).code).toBe("not_found");
  });

  test("unloading a busy model without leases waits for its request, then stops it", async () => {
    const t = setup(model("a"));
    const lease = await t.up("a");
    t.rt.unload("a");
    expect(t.fakes.of("a").stops).toBe(0);
    lease.release();
    expect(t.fakes.of("a").state).toBe("stopping");
  });

  test("unloading a loading model: its waiters hear model_unloaded once the process is down", async () => {
    const t = setup(model("a"));
    const p = t.acquire("a");
    await settle();
    t.rt.unload("a");
    await settle();
    expect(t.fakes.of("a").state).toBe("stopping");
    expect(p.done).toBe(false);
    t.fakes.of("a").stopped();
    await settle();
    expect(p.error).toMatchObject({ code: "model_unloaded", status: 503 });
    expect(t.status("a").state).toBe("stopped");
  });
});

describe("time", () => {
  test("a lease expires by the clock; a renewal extends it", async () => {
    const t = setup(model("a"));
    const info = await t.lease("a", 400);
    t.timers.advance(300);
    expect(t.rt.renewLease("a", info.lease, 600).expires_in_s).toBe(1);
    t.timers.advance(599);
    expect(t.status("a")).toMatchObject({ inflight: 1, leases: 1 });
    t.timers.advance(1);
    expect(t.status("a")).toMatchObject({ inflight: 0, leases: 0 });
    expect(t.log()).toContain(`lease ${info.lease} on "a" expired after 0.6 s without renewal`);
    t.rt.releaseLease("a", (await t.lease("a", 400)).lease);
    expect(t.status("a")).toMatchObject({ inflight: 0, leases: 0 });
  });

  test("ttl_s: the wake timer stops an idle model when its time is up", async () => {
    const t = setup(model("a", "ttl_s = 1"));
    (await t.up("a")).release();
    t.timers.advance(999);
    expect(t.fakes.of("a").stops).toBe(0);
    t.timers.advance(1);
    expect(t.fakes.of("a").state).toBe("stopping");
    expect(t.log()).toContain("stopping a (ttl)");
  });

  test("stall streaks: three timeouts in the window with no answer between restart the model", async () => {
    const t = setup(model("a"));
    (await t.up("a")).release();
    t.rt.reportStall("a");
    t.rt.reportAnswered("a"); // an answer ends the streak
    t.rt.reportStall("a");
    t.rt.reportStall("a");
    expect(t.log()).toContain('model "a" timed out (2 of 3 before a restart)');
    t.timers.advance(10 * 60_000); // both are out of the window now
    t.rt.reportStall("a");
    t.rt.reportStall("a");
    expect(t.fakes.of("a").stops).toBe(0);
    t.rt.reportStall("a");
    expect(t.log()).toContain('model "a" timed out 3 times without an answer: restarting it');
    expect(t.fakes.of("a").state).toBe("stopping");
  });
});

describe("shutdown", () => {
  test("waiters and new callers are refused; stopAll releases leases and stops every process", async () => {
    const t = setup(model("a", "concurrency_limit = 1"), model("b"));
    await t.lease("a", 60_000);
    const queued = t.acquire("a");
    await settle();
    t.rt.beginShutdown();
    await settle();
    expect(t.rt.shuttingDown).toBe(true);
    expect(queued.error).toMatchObject({ code: "shutting_down", status: 503 });
    const late = t.acquire("b");
    await settle();
    expect(late.error?.code).toBe("shutting_down");
    expect(t.rt.inflight()).toBe(1); // the lease runs on until stopAll
    let stopped = false;
    void t.rt.stopAll().then(() => {
      stopped = true;
    });
    await settle();
    expect(t.rt.inflight()).toBe(0);
    expect(stopped).toBe(false);
    t.fakes.of("a").stopped();
    await settle();
    expect(stopped).toBe(true);
    for (const id of ["a", "b"]) expect(t.fakes.of(id).state).toBe("stopped");
    expect(t.timers.pending).toBe(0);
  });

  test("cutInflight ends every live call with a shutting_down error; ended ones are untouched", () => {
    const t = setup(model("a"));
    const cfg = t.rt.config.models.a!;
    const live = Deadline.forModel(cfg, { sweep: t.rt.calls });
    const over = Deadline.forModel(cfg, { sweep: t.rt.calls });
    live.start();
    over.end(true);
    t.rt.cutInflight();
    expect(live.signal.aborted).toBe(true);
    expect(live.signal.reason).toMatchObject({ code: "shutting_down" });
    expect(over.signal.aborted).toBe(false);
    expect(t.rt.calls.size).toBe(0);
  });
});
