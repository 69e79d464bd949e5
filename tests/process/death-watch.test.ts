/**
 * The death watch against the real shell: what it kills when qm's end of its input closes
 * (what qm's death does), what it leaves, the signals it ignores, its replacement, and the
 * lines it ignores. Each test waits on real exits, never on fixed sleeps.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { platform } from "../../src/platform/index.ts";
import {
  DeathWatch,
  MIN_LIFE_MS,
  spawnWatcher,
  type WatcherProcess,
} from "../../src/process/death-watch.ts";
import { until } from "../support/e2e.ts";
import { alive } from "../support/qm-process.ts";

const procs: Bun.Subprocess[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) {
    try {
      process.kill(-p.pid, "SIGKILL");
    } catch {}
  }
});

/** A process group of its own (the leader's pid is the group's id), as a model's is. */
function group(cmd: string[] = ["sleep", "60"]): Bun.Subprocess {
  const p = Bun.spawn(cmd, { stdin: "ignore", stdout: "ignore", stderr: "ignore", detached: true });
  procs.push(p);
  return p;
}

/** A watch whose watchers the test can see, on a clock the test moves. */
function watch() {
  const spawned: WatcherProcess[] = [];
  const clock = { t: 0 };
  const warned: string[] = [];
  const w = new DeathWatch(
    () => {
      const p = spawnWatcher();
      spawned.push(p);
      return p;
    },
    { warn: (line: string) => warned.push(line) },
    () => clock.t,
  );
  return { w, spawned, clock, warned };
}

/** No member of the group runs any more (zombies waiting for init hold nothing). */
const groupGone = (pgid: number) =>
  until(
    async () => platform.groupRunning(pgid),
    (running) => !running,
    5000,
  );

/** HUP, INT, QUIT and TERM (signals 1, 2, 3, 15) in a `SigIgn` mask. */
const TRAPPED = 0x4007n;

/** The watcher has run its first line: /proc says it ignores the four signals. */
const ignoring = (pid: number) =>
  until(
    async () => {
      const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^SigIgn:\s*(\w+)/m);
      return line ? (BigInt(`0x${line[1]}`) & TRAPPED) === TRAPPED : false;
    },
    (all) => all,
    5000,
  );

describe("the death watch", () => {
  test("at the end of its input it SIGKILLs every group still listed, and none removed", async () => {
    const { w, spawned } = watch();
    const a = group();
    const b = group();
    const c = group();
    w.add(a.pid);
    w.add(b.pid);
    w.add(c.pid);
    w.remove(b.pid);
    expect(spawned).toHaveLength(1);
    w.end();
    await a.exited;
    await c.exited;
    expect([a.signalCode, c.signalCode]).toEqual(["SIGKILL", "SIGKILL"]);
    await spawned[0]!.exited;
    expect(alive(b.pid)).toBe(true);
  });

  test("the whole group goes, not its leader alone", async () => {
    const { w } = watch();
    const tree = group(["sh", "-c", "sleep 60 & sleep 60 & wait"]);
    w.add(tree.pid);
    w.end();
    await tree.exited;
    await groupGone(tree.pid);
  });

  test("it ignores INT, TERM, HUP and QUIT: a group added after them still dies with qm", async () => {
    const { w, spawned } = watch();
    const a = group();
    w.add(a.pid);
    const pid = spawned[0]!.pid;
    await ignoring(pid);
    for (const s of ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"] as const) process.kill(pid, s);
    const b = group();
    w.add(b.pid);
    w.end();
    await a.exited;
    await b.exited;
    expect([a.signalCode, b.signalCode]).toEqual(["SIGKILL", "SIGKILL"]);
    expect(spawned).toHaveLength(1);
  });

  test("a watcher killed while qm runs is replaced at once, and told every group", async () => {
    const { w, spawned, clock, warned } = watch();
    const a = group();
    const b = group();
    w.add(a.pid);
    w.add(b.pid);
    clock.t = MIN_LIFE_MS;
    process.kill(spawned[0]!.pid, "SIGKILL");
    await spawned[0]!.exited;
    await until(
      async () => spawned.length,
      (n) => n === 2,
      5000,
    );
    expect(w.pid).toBe(spawned[1]!.pid);
    expect(warned).toEqual([`the death watch (pid ${spawned[0]!.pid}) exited; starting another`]);
    w.end();
    await a.exited;
    await b.exited;
    expect([a.signalCode, b.signalCode]).toEqual(["SIGKILL", "SIGKILL"]);
  });

  test("one that died within a second of its start is replaced at the next change only", async () => {
    const { w, spawned } = watch();
    const a = group();
    w.add(a.pid);
    process.kill(spawned[0]!.pid, "SIGKILL");
    await spawned[0]!.exited;
    await until(
      async () => w.pid,
      (pid) => pid === null,
      5000,
    );
    expect(spawned).toHaveLength(1);
    const b = group();
    w.add(b.pid);
    expect(spawned).toHaveLength(2);
    w.end();
    await a.exited;
    await b.exited;
    expect([a.signalCode, b.signalCode]).toEqual(["SIGKILL", "SIGKILL"]);
  });

  test("lines that name no group (0, 1, words, nothing) are passed over", async () => {
    const watcher = spawnWatcher();
    const a = group();
    watcher.write(`+0\n+1\n+abc\n+\n-\n+-5\n${"+".repeat(10_000)}\n+${a.pid}\n`);
    watcher.end();
    await a.exited;
    expect(a.signalCode).toBe("SIGKILL");
    await watcher.exited;
  });

  test("off: nothing started, nothing listed", () => {
    const w = new DeathWatch(null);
    w.add(123);
    expect(w.enabled).toBe(false);
    expect(w.pid).toBeNull();
  });

  test("a watcher that cannot start is said once, and tried again at the next group", () => {
    const warned: string[] = [];
    let tries = 0;
    const w = new DeathWatch(
      () => {
        tries++;
        throw new Error("no shell");
      },
      { warn: (line: string) => warned.push(line) },
    );
    w.add(10);
    w.add(11);
    expect(tries).toBe(2);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain("cannot watch for qm's own death (no shell)");
  });
});
