/**
 * ModelProcess with real processes: descendants that left the process group die with the
 * model, and a port someone else holds is never taken for the model's.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { ModelConfig } from "../../src/config/types.ts";
import type { ProcessExit } from "../../src/process/exit-info.ts";
import { ModelProcess } from "../../src/process/model-process.ts";
import { liveGroups } from "../../src/process/process-group.ts";
import { tree } from "../../src/process/tree-watch.ts";
import { QmError } from "../../src/shared/errors.ts";
import { commandLine } from "../support/config.ts";
import { DEMO_CLI, demoModel } from "../support/demo-model.ts";
import { freePort } from "../support/net.ts";
import { alive, captureLogger, deferred } from "./support.ts";

const made: ModelProcess[] = [];
const pids: number[] = [];
const servers: Bun.Server<undefined>[] = [];

afterEach(async () => {
  await Promise.all(made.splice(0).map((p) => p.stop()));
  await Promise.all(servers.splice(0).map((s) => s.stop(true)));
  for (const pid of pids.splice(0)) expect(alive(pid)).toBe(false);
  expect(liveGroups()).toEqual([]);
  expect(tree.snapshot()).toEqual([]);
});

function supervise(model: ModelConfig) {
  const cap = captureLogger();
  const exited = deferred<ProcessExit>();
  const moved: ModelConfig[] = [];
  const proc = new ModelProcess(model, {
    healthCheckTimeoutS: 10,
    log: cap.log,
    onExit: (e) => exited.resolve(e),
    onConfigChange: (m) => moved.push(m),
  });
  made.push(proc);
  return { proc, exited: exited.promise, moved, ...cap };
}

/** The demo behind `sh -c`, inside `script`; the shell's lines are in the log. */
function shellModel(id: string, script: (demo: string) => string): ModelConfig {
  return demoModel(id, [], { cmd: (demo) => commandLine(["sh", "-c", script(demo)]) });
}

const pidAfter = (proc: ModelProcess, tag: string) =>
  Number(
    proc
      .logs()
      .find((l) => l.startsWith(`${tag} `))
      ?.slice(tag.length + 1),
  );

/** Who answers on a port and what it was asked: the stranger. */
function stranger(port: number): string[] {
  const seen: string[] = [];
  servers.push(
    Bun.serve({
      hostname: "127.0.0.1",
      port,
      fetch(req) {
        seen.push(new URL(req.url).pathname);
        return new Response("ok");
      },
    }),
  );
  return seen;
}

describe("descendants outside the process group", () => {
  test("stop() ends a setsid grandchild", async () => {
    const { proc } = supervise(
      shellModel("tree", (demo) => `${demo} & setsid sleep 1000 & echo "gc $!"; wait`),
    );
    await proc.start();
    pids.push(proc.pid!);
    const gc = pidAfter(proc, "gc");
    pids.push(gc);
    expect(alive(gc)).toBe(true);
    await proc.stop();
    expect(alive(gc)).toBe(false);
  });

  test("a crash of the leader ends a setsid grandchild", async () => {
    const { proc, exited } = supervise(
      shellModel(
        "crashy",
        (demo) => `setsid sleep 1000 & echo "gc $!"; exec ${demo} --exit-after-ms 300`,
      ),
    );
    await proc.start();
    pids.push(proc.pid!);
    const gc = pidAfter(proc, "gc");
    pids.push(gc);
    expect(alive(gc)).toBe(true);
    expect((await exited).phase).toBe("ready");
    expect(alive(gc)).toBe(false);
  });
});

describe("a port someone else holds", () => {
  test("an allocated port is moved: onConfigChange gets the new config; the stranger is never asked", async () => {
    const port = freePort();
    const seen = stranger(port);
    // `--port ${PORT}` allocated from the port the stranger holds.
    const { proc, moved, lines } = supervise(demoModel("mover", [], { port }));
    await proc.start();
    pids.push(proc.pid!);
    expect(moved).toHaveLength(1);
    const now = moved[0]!;
    expect(now.id).toBe("mover");
    expect(now.port).not.toBe(port);
    expect(now.argv).toContain(String(now.port));
    expect(now.argv[1]).toBe(DEMO_CLI);
    const res = await fetch(`${now.proxy}/v1/models`);
    expect(((await res.json()) as { data: { id: string }[] }).data[0]?.id).toBe("mover");
    expect(seen).toEqual([]);
    expect(lines.join("\n")).toContain(`port ${port} is in use`);
  });

  test("a fixed port: the start fails with port_in_use and nothing is spawned", async () => {
    const port = freePort();
    const seen = stranger(port);
    const { proc, lines } = supervise(demoModel("fixed", [], { port, fixed: true }));
    const err = await proc.start().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(QmError);
    expect((err as QmError).code).toBe("port_in_use");
    expect(proc.state).toBe("stopped");
    expect(lines.some((l) => l.includes("starting model"))).toBe(false);
    expect(seen).toEqual([]);
  });

  test("a stranger that binds the port while the model starts is not taken for it", async () => {
    const port = freePort();
    // The model never listens; a stranger turns up on its port after the spawn.
    const { proc } = supervise(demoModel("late", [], { port, fixed: true, cmd: () => "sleep 30" }));
    const starting = proc.start().then(
      () => null,
      (e: unknown) => e,
    );
    pids.push(proc.pid!);
    const seen = stranger(port);
    const err = (await starting) as QmError;
    expect(err).toBeInstanceOf(QmError);
    expect(err.code).toBe("port_in_use");
    expect(err.message).toContain(`pid ${process.pid} (`);
    expect(proc.state).toBe("stopped");
    // It answered the health check, and nothing else.
    expect(seen.every((p) => p === "/health")).toBe(true);
  });
});
