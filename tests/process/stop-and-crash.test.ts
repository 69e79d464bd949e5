/**
 * Stopping (SIGTERM, SIGKILL escalation, cmd_stop) and crashes of a ready model. The
 * escalation's limit runs on a fake clock where a test is about it: a real child's exit still
 * takes real time, so those tests wait for real events and assert their order, not how long.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { ModelConfig } from "../../src/config/types.ts";
import type { ProcessExit } from "../../src/process/exit-info.ts";
import { ModelProcess, type ModelProcessOptions } from "../../src/process/model-process.ts";
import { killAllSync, liveGroups } from "../../src/process/process-group.ts";
import { commandLine, tomlString } from "../support/config.ts";
import { demoModel } from "../support/demo-model.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { alive, captureLogger, deferred } from "./support.ts";

// biome-ignore lint/suspicious/noTemplateCurlyInString: qm's cmd_stop macro, not JS.
const PID = "${PID}";

const made: ModelProcess[] = [];
const pids: number[] = [];

function supervise(model: ModelConfig, opts: Partial<ModelProcessOptions> = {}) {
  const cap = captureLogger();
  const exited = deferred<ProcessExit>();
  const exits: ProcessExit[] = [];
  const proc = new ModelProcess(model, {
    healthCheckTimeoutS: 10,
    log: cap.log,
    onExit: (e) => {
      exits.push(e);
      exited.resolve(e);
    },
    ...opts,
  });
  made.push(proc);
  return { proc, exits, exited: exited.promise, ...cap };
}

async function startAndRecord(proc: ModelProcess): Promise<number> {
  await proc.start();
  pids.push(proc.pid!);
  return proc.pid!;
}

/** Lets every promise chain in flight run (no clock time passes). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

/** `settled` resolves once `p` has settled; `done()` says whether it has yet. */
function watch(p: Promise<unknown>): { done: () => boolean; settled: Promise<unknown> } {
  let done = false;
  const settled = p.finally(() => {
    done = true;
  });
  return { done: () => done, settled };
}

afterEach(async () => {
  await Promise.all(made.splice(0).map((p) => p.stop()));
  for (const pid of pids.splice(0)) expect(alive(pid)).toBe(false);
  expect(liveGroups()).toEqual([]);
});

describe("stop", () => {
  test("SIGTERM stops the process group gracefully", async () => {
    const { proc, exits } = supervise(demoModel("term"));
    const pid = await startAndRecord(proc);
    await proc.stop();
    expect(proc.state).toBe("stopped");
    expect(proc.pid).toBeNull();
    expect(alive(pid)).toBe(false);
    expect(proc.logs()).toContain("demo-upstream term: SIGTERM, shutting down");
    // Asked-for exits are not crashes.
    expect(exits).toEqual([]);
  });

  test("stop() is idempotent and joins a stop in progress", async () => {
    const { proc } = supervise(demoModel("twice"));
    await startAndRecord(proc);
    const a = proc.stop();
    expect(proc.stop()).toBe(a);
    await a;
    await proc.stop();
    expect(proc.state).toBe("stopped");
  });

  test("a process that ignores SIGTERM is SIGKILLed once stop_timeout_s has passed, not before", async () => {
    const timers = new FakeTimers();
    // Ready once spawned: no health poll, so every timer of the process is the stop's.
    const { proc, lines, waitFor } = supervise(
      demoModel("stubborn", ["--ignore-sigterm"], {
        toml: 'stop_timeout_s = 0.3\ncheck_endpoint = "none"',
      }),
      { timers },
    );
    const pid = await startAndRecord(proc);
    await waitFor("listening on"); // its SIGTERM handler is in place
    const stop = watch(proc.stop());
    await waitFor("ignoring SIGTERM");
    timers.advance(299);
    await settle();
    expect(stop.done()).toBe(false);
    expect(alive(pid)).toBe(true);
    expect(lines.some((l) => l.includes("sending SIGKILL"))).toBe(false);
    timers.advance(1);
    await stop.settled;
    expect(alive(pid)).toBe(false);
    expect(proc.logs()).toContain("demo-upstream stubborn: ignoring SIGTERM (--ignore-sigterm)");
    expect(
      lines.some((l) => l.includes("still running 0.3 s after the stop request; sending SIGKILL")),
    ).toBe(true);
    expect(timers.pending).toBe(0);
  });

  test("cmd_stop runs with the PID macro instead of SIGTERM", async () => {
    const { proc } = supervise(
      demoModel("custom", [], { toml: `cmd_stop = ${tomlString(`kill -s INT ${PID}`)}` }),
    );
    const pid = await startAndRecord(proc);
    await proc.stop();
    expect(alive(pid)).toBe(false);
    // SIGINT, not SIGTERM: the process was stopped by cmd_stop.
    expect(proc.logs()).toContain("demo-upstream custom: SIGINT, shutting down");
  });

  test("stop waits for a cmd_stop that outlives the model: no group is left behind", async () => {
    const { proc } = supervise(
      demoModel("lingering", [], {
        toml: `cmd_stop = ${tomlString(`sh -c "kill -s INT ${PID}; sleep 0.3"`)}`,
      }),
    );
    const pid = await startAndRecord(proc);
    await proc.stop();
    expect(alive(pid)).toBe(false);
    expect(proc.logs()).toContain("demo-upstream lingering: SIGINT, shutting down");
    // The stop command's own group has exited too by the time stop() resolves.
    expect(liveGroups()).toEqual([]);
  });

  test("a cmd_stop still running at stop_timeout_s after the model went is killed then", async () => {
    const timers = new FakeTimers();
    const { proc, lines, waitFor } = supervise(
      demoModel("hanging", [], {
        toml:
          `cmd_stop = ${tomlString(`sh -c "kill -s INT ${PID}; sleep 30"`)}\n` +
          'stop_timeout_s = 0.3\ncheck_endpoint = "none"',
      }),
      { timers },
    );
    await startAndRecord(proc);
    await waitFor("listening on"); // its SIGINT handler is in place
    const stop = watch(proc.stop());
    await waitFor('model "hanging" stopped');
    // The model went; the stop waits for its cmd_stop, still sleeping in a group of its own.
    timers.advance(299);
    await settle();
    expect(stop.done()).toBe(false);
    expect(liveGroups()).toHaveLength(1);
    timers.advance(1);
    await stop.settled;
    // Its group is untracked only once its exit was seen.
    expect(liveGroups()).toEqual([]);
    expect(lines.some((l) => l.includes("cmd_stop still running after 0.3 s; killing it"))).toBe(
      true,
    );
  });

  test("a failing cmd_stop falls back to SIGTERM", async () => {
    const { proc, lines } = supervise(
      demoModel("fallback", [], { toml: `cmd_stop = ${tomlString(`false ${PID}`)}` }),
    );
    const pid = await startAndRecord(proc);
    await proc.stop();
    expect(alive(pid)).toBe(false);
    expect(lines.some((l) => l.includes("cmd_stop failed; sending SIGTERM instead"))).toBe(true);
    expect(proc.logs()).toContain("demo-upstream fallback: SIGTERM, shutting down");
  });

  test("the whole process group goes, children included", async () => {
    // The shell reports its background child's pid, then becomes the demo (exec).
    const { proc } = supervise(
      demoModel("tree", [], {
        cmd: (demo) => commandLine(["sh", "-c", `sleep 30 & echo "child $!"; exec ${demo}`]),
      }),
    );
    await startAndRecord(proc);
    const child = Number(
      proc
        .logs()
        .find((l) => l.startsWith("child "))
        ?.slice(6),
    );
    expect(alive(child)).toBe(true);
    await proc.stop();
    expect(alive(child)).toBe(false);
  });
});

describe("crash", () => {
  test("an exit while ready calls onExit with the stderr tail", async () => {
    const { proc, exited, exits } = supervise(demoModel("flaky", ["--exit-after-ms", "300"]));
    await startAndRecord(proc);
    expect(proc.state).toBe("ready");
    const exit = await exited;
    expect(exit).toMatchObject({ code: 1, signal: null, phase: "ready" });
    expect(exit.stderrTail).toContain(
      "demo-upstream flaky: exiting after 300 ms (--exit-after-ms)",
    );
    expect(proc.state).toBe("stopped");
    expect(proc.pid).toBeNull();
    expect(exits).toHaveLength(1);
  });

  test("a crash mid-stream reports the exit; leftover children are killed", async () => {
    const model = demoModel("midway", ["--crash-after-tokens", "3"], {
      cmd: (demo) => commandLine(["sh", "-c", `sleep 30 & echo "child $!"; exec ${demo}`]),
    });
    const { proc, exited } = supervise(model);
    await startAndRecord(proc);
    const child = Number(
      proc
        .logs()
        .find((l) => l.startsWith("child "))
        ?.slice(6),
    );
    const res = await fetch(`${model.proxy}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "midway", messages: [], stream: true }),
    });
    const text = await res.text().catch(() => "");
    expect(text).not.toContain("[DONE]");
    const exit = await exited;
    expect(exit.code).toBe(1);
    expect(exit.stderrTail.join("\n")).toContain("simulated crash after 3 tokens");
    expect(alive(child)).toBe(false);
  });

  test("restarting after a crash works", async () => {
    const { proc, exited } = supervise(demoModel("phoenix", ["--exit-after-ms", "200"]));
    await startAndRecord(proc);
    await exited;
    await startAndRecord(proc);
    expect(proc.state).toBe("ready");
  });
});

test("killAllSync SIGKILLs every live process group", async () => {
  const { proc, exited } = supervise(demoModel("doomed", ["--ignore-sigterm"]));
  const pid = await startAndRecord(proc);
  expect(liveGroups()).toContain(pid);
  expect(killAllSync()).toBe(1);
  const exit = await exited;
  expect(exit.signal).toBe("SIGKILL");
  expect(alive(pid)).toBe(false);
});
