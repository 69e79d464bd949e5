/** Stopping (SIGTERM, SIGKILL escalation, cmd_stop) and crashes of a ready model. */
import { afterEach, describe, expect, test } from "bun:test";
import type { ModelConfig } from "../../src/config/types.ts";
import type { ProcessExit } from "../../src/process/exit-info.ts";
import { ModelProcess } from "../../src/process/model-process.ts";
import { killAllSync, liveGroups } from "../../src/process/process-group.ts";
import { commandLine, tomlString } from "../support/config.ts";
import { demoModel } from "../support/demo-model.ts";
import { alive, captureLogger, deferred } from "./support.ts";

// biome-ignore lint/suspicious/noTemplateCurlyInString: qm's cmd_stop macro, not JS.
const PID = "${PID}";

const made: ModelProcess[] = [];
const pids: number[] = [];

function supervise(model: ModelConfig) {
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
  });
  made.push(proc);
  return { proc, exits, exited: exited.promise, ...cap };
}

async function startAndRecord(proc: ModelProcess): Promise<number> {
  await proc.start();
  pids.push(proc.pid!);
  return proc.pid!;
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

  test("a process that ignores SIGTERM is SIGKILLed after stopTimeoutS", async () => {
    const { proc, lines } = supervise(
      demoModel("stubborn", ["--ignore-sigterm"], { toml: "stop_timeout_s = 0.3" }),
    );
    const pid = await startAndRecord(proc);
    const t0 = performance.now();
    await proc.stop();
    const took = performance.now() - t0;
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(2000);
    expect(alive(pid)).toBe(false);
    expect(proc.logs()).toContain("demo-upstream stubborn: ignoring SIGTERM (--ignore-sigterm)");
    expect(lines.some((l) => l.includes("sending SIGKILL"))).toBe(true);
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

  test("a cmd_stop still running at stop_timeout_s after the model went is killed", async () => {
    const { proc, lines } = supervise(
      demoModel("hanging", [], {
        toml:
          `cmd_stop = ${tomlString(`sh -c "kill -s INT ${PID}; sleep 30"`)}\n` +
          "stop_timeout_s = 0.3",
      }),
    );
    await startAndRecord(proc);
    const t0 = performance.now();
    await proc.stop();
    expect(performance.now() - t0).toBeLessThan(5000);
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
