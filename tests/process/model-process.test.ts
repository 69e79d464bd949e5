/**
 * ModelProcess against the real demo upstream (`bun src/demo/cli.ts`). Tests wait on real
 * events (start resolving, onExit firing), never on fixed sleeps; where qm's own limits are under
 * test they run on a fake clock, and the tests assert the order of events, not elapsed time.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { ModelConfig } from "../../src/config/types.ts";
import type { ProcessExit } from "../../src/process/exit-info.ts";
import { ModelProcess, type ModelProcessOptions } from "../../src/process/model-process.ts";
import { liveGroups } from "../../src/process/process-group.ts";
import { QmError } from "../../src/shared/errors.ts";
import type { Fetch } from "../../src/shared/fetch.ts";
import { demoModel } from "../support/demo-model.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { alive, captureLogger } from "./support.ts";

const made: ModelProcess[] = [];
const pids: number[] = [];

function supervise(model: ModelConfig, opts: Partial<ModelProcessOptions> = {}) {
  const cap = captureLogger();
  const exits: ProcessExit[] = [];
  const proc = new ModelProcess(model, {
    healthCheckTimeoutS: 10,
    log: cap.log,
    onExit: (e) => exits.push(e),
    ...opts,
  });
  made.push(proc);
  return { proc, exits, ...cap };
}

async function startAndRecord(proc: ModelProcess): Promise<number> {
  await proc.start();
  const pid = proc.pid!;
  pids.push(pid);
  return pid;
}

async function rejection(p: Promise<unknown>): Promise<QmError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(QmError);
    return err as QmError;
  }
  throw new Error("expected a rejection");
}

/** Lets every promise chain in flight run (no clock time passes). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

afterEach(async () => {
  await Promise.all(made.splice(0).map((p) => p.stop()));
  for (const pid of pids.splice(0)) expect(alive(pid)).toBe(false);
  expect(liveGroups()).toEqual([]);
});

describe("start", () => {
  test("spawns, polls health until ready, and serves", async () => {
    const model = demoModel("alpha");
    const states: string[] = [];
    const heard: string[] = [];
    const { proc, lines } = supervise(model, {
      onStateChange: (s) => states.push(s),
      onLine: (l) => heard.push(l),
    });
    expect(proc.state).toBe("stopped");
    const starting = proc.start();
    expect(proc.state).toBe("starting");
    await starting;
    expect(proc.state).toBe("ready");
    expect(proc.pid).toBeGreaterThan(0);
    const res = await fetch(`${model.proxy}/v1/models`);
    expect(((await res.json()) as { data: { id: string }[] }).data[0]?.id).toBe("alpha");
    expect(proc.logs().some((l) => l.startsWith("listening on http://127.0.0.1:"))).toBe(true);
    // Live followers hear every kept line as it is read.
    expect(heard).toEqual(proc.logs());
    // Upstream output reaches the logger at debug level, prefixed with the model id.
    expect(lines.some((l) => / DEBUG \[alpha\] listening on /.test(l))).toBe(true);
    pids.push(proc.pid!);
    await proc.stop();
    expect(states).toEqual(["starting", "ready", "stopping", "stopped"]);
  });

  test("concurrent start() calls share one spawn", async () => {
    const { proc } = supervise(demoModel("shared"));
    const a = proc.start();
    const b = proc.start();
    expect(b).toBe(a);
    await a;
    pids.push(proc.pid!);
    await proc.start(); // ready: resolves at once
  });

  test("honours a load delay: ready only once the upstream turned healthy", async () => {
    const { proc, waitFor } = supervise(demoModel("slow", ["--load-delay-ms", "400"]));
    const t0 = performance.now();
    await startAndRecord(proc);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(400);
    expect(proc.state).toBe("ready");
    // The demo prints this line when /health turns 200 (it travels through a pipe, so it may
    // arrive after readiness was seen). How soon after it qm sees readiness is a timing: the
    // bench's readiness section measures it against its 30 ms target.
    await waitFor("model loaded, ready");
  });

  test("probes come closer early in a load and near its expected end (its loads so far)", async () => {
    const timers = new FakeTimers();
    const at: number[] = [];
    const fake: Fetch = () => {
      at.push(timers.now());
      return Promise.resolve(new Response(null, { status: timers.now() < 990 ? 503 : 200 }));
    };
    // A server that prints nothing (a printed line would bring a probe forward too).
    const { proc } = supervise(demoModel("timed", [], { cmd: () => "sleep 30" }), {
      fetch: fake,
      timers,
      expectedLoadMs: () => 1000,
    });
    const started = startAndRecord(proc);
    let ready = false;
    void started.then(() => {
      ready = true;
    });
    for (let t = 0; t < 2000 && !ready; t++) {
      await settle();
      timers.advance(1);
    }
    await started;
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    // Early: 2 ms apart (a fiftieth of the time taken, 2 at least).
    expect(at.slice(0, 5)).toEqual([0, 2, 4, 6, 8]);
    // Later, the interval (10 ms) until the window (950 – 1050 ms: 50 either side of 1000).
    expect(gaps.filter((_g, i) => at[i]! >= 500 && at[i + 1]! < 950)).toContain(10);
    expect(at.filter((t) => t >= 950)).toEqual([
      950, 952, 954, 956, 958, 960, 962, 964, 966, 968, 970, 972, 974, 976, 978, 980, 982, 984, 986,
      988, 990,
    ]);
  });

  test("checkEndpoint null: ready as soon as spawned, with no probe and no wait", async () => {
    let probes = 0;
    const counted: Fetch = (url, init) => {
      probes++;
      return fetch(url, init);
    };
    const timers = new FakeTimers();
    const { proc } = supervise(
      demoModel("nocheck", ["--load-delay-ms", "5000"], { toml: 'check_endpoint = "none"' }),
      { fetch: counted, timers },
    );
    await startAndRecord(proc);
    expect(proc.state).toBe("ready");
    expect(probes).toBe(0);
    expect(timers.pending).toBe(0);
    // Ready before the upstream itself says it has loaded (5 s away).
    expect(proc.logs().some((l) => l.includes("model loaded, ready"))).toBe(false);
  });

  test("a crash at start rejects at once, naming the model, status and stderr", async () => {
    // The clock never moves: the health deadline cannot pass, only the exit can end the start.
    const timers = new FakeTimers();
    const { proc, exits } = supervise(demoModel("broken", ["--crash-at-start"]), { timers });
    const err = await rejection(proc.start());
    expect(err.code).toBe("upstream_start_failed");
    expect(err.status).toBe(502);
    expect(err.message).toContain('model "broken"');
    expect(err.message).toContain("exit code 1");
    expect(err.message).toContain("failed to load model (simulated by --crash-at-start)");
    // The same facts as data, for API layers that render them without parsing the message.
    expect(err.exit).toMatchObject({ model: "broken", code: 1, signal: null });
    expect(err.exit?.stderrTail.join("\n")).toContain("failed to load model");
    expect(proc.state).toBe("stopped");
    expect(proc.pid).toBeNull();
    expect(exits).toHaveLength(1);
    expect(exits[0]).toMatchObject({ code: 1, signal: null, phase: "starting" });
    expect(proc.stderrTail().join("\n")).toContain("failed to load model");
  });

  test("a command that cannot run rejects with upstream_start_failed", async () => {
    const { proc } = supervise(
      demoModel("missing", [], { cmd: () => "/nonexistent/llama-server" }),
    );
    const err = await rejection(proc.start());
    expect(err.code).toBe("upstream_start_failed");
    expect(err.message).toContain('model "missing"');
    expect(proc.state).toBe("stopped");
  });

  test("a health endpoint that never answers times out at the deadline, not before, and is stopped", async () => {
    const timers = new FakeTimers();
    const { proc, exits, waitFor } = supervise(demoModel("hung", ["--hang-health"]), {
      healthCheckTimeoutS: 0.5,
      timers,
    });
    let failed = false;
    const rejected = rejection(proc.start()).finally(() => {
      failed = true;
    });
    const pid = proc.pid!;
    pids.push(pid);
    await waitFor("listening on"); // from now on every probe hangs
    timers.advance(499);
    await settle();
    expect(failed).toBe(false);
    expect(proc.state).toBe("starting");
    timers.advance(1);
    const err = await rejected;
    expect(err.code).toBe("upstream_start_timeout");
    expect(err.status).toBe(504);
    expect(err.message).toContain('model "hung" did not become ready within 0.5 s');
    expect(proc.state).toBe("stopped");
    expect(alive(pid)).toBe(false);
    // The supervisor stopped it: not a crash.
    expect(exits).toEqual([]);
  });

  test("stop() during start rejects the start with a clear error", async () => {
    const { proc, exits } = supervise(demoModel("cancelled", ["--load-delay-ms", "10000"]));
    const starting = proc.start();
    pids.push(proc.pid!);
    const stopped = proc.stop();
    expect(proc.state).toBe("stopping");
    const err = await rejection(starting);
    expect(err.code).toBe("cancelled");
    expect(err.message).toContain('loading model "cancelled" was cancelled');
    await stopped;
    expect(proc.state).toBe("stopped");
    expect(exits).toEqual([]);
  });

  test("setConfig applies at the next spawn", async () => {
    const first = demoModel("swap");
    const { proc } = supervise(first);
    await startAndRecord(proc);
    await proc.stop();
    const second = demoModel("swap", ["--name", "renamed"]);
    proc.setConfig(second);
    await startAndRecord(proc);
    const res = await fetch(`${second.proxy}/v1/models`);
    expect(((await res.json()) as { data: { id: string }[] }).data[0]?.id).toBe("renamed");
  });
});
