/** TreeWatch against a fake /proc: which processes count as a model's, what gets signalled. */
import { beforeEach, describe, expect, test } from "bun:test";
import { TreeWatch } from "../../src/process/tree-watch.ts";
import { FakeProc } from "../support/fake-proc.ts";
import { FakeTimers } from "../support/fake-timers.ts";

const QM = 100;
const MARK = [`QM_OWNER=${QM}:5`, "QM_MODEL=m"];

let fs: FakeProc;
let kills: string[];
let reaped: number[];
let spawned: number[];
let changes: number;
let watch: TreeWatch;

beforeEach(() => {
  fs = new FakeProc();
  fs.add(QM, { start: 5, session: 7, pgrp: 7 });
  kills = [];
  reaped = [];
  spawned = [];
  changes = 0;
  watch = new TreeWatch({
    fs,
    self: { pid: QM, start: 5 },
    kill: (pid, sig) => kills.push(`${sig} ${pid}`),
    reap: (pid) => {
      reaped.push(pid);
      fs.remove(pid);
      return true;
    },
    spawned: () => spawned,
    scanIntervalMs: 1e9, // never fires here: the tests scan explicitly
  });
  watch.onChange = () => changes++;
  // The leader: qm's child, leading its own session (detached: true).
  fs.add(200, { ppid: QM, start: 50 });
  spawned.push(200);
});

const pids = () => watch.snapshot()[0]!.descendants.map((d) => d.pid);

describe("what belongs to a model", () => {
  test("descendants by parent links, the leader's group and session; strangers not", () => {
    watch.register("m", 200, 9000);
    fs.add(201, { ppid: 200, pgrp: 200, session: 200 });
    fs.add(202, { ppid: 201 }); // setsid: a session of its own, still a grandchild
    fs.add(203, { ppid: 1, pgrp: 200, session: 200 }); // double-forked, kept the session
    fs.add(300, { ppid: 1 });
    fs.add(301, { ppid: QM }); // a child of qm without the mark (e.g. the GPU probe)
    watch.scan();
    expect(pids().sort()).toEqual([201, 202, 203]);
    expect(watch.snapshot()[0]).toMatchObject({
      model: "m",
      port: 9000,
      leader: { pid: 200, start: 50 },
    });
    expect(watch.members(200).sort()).toEqual([200, 201, 202, 203]);
    expect(watch.ownerOf(202)).toBe("m");
    expect(watch.ownerOf(300)).toBeNull();
    expect(changes).toBeGreaterThanOrEqual(2); // register, then the new descendants
  });

  test("a recorded descendant still counts after its parent died and it was reparented", () => {
    watch.register("m", 200, null);
    fs.add(201, { ppid: 200, pgrp: 200, session: 200 });
    fs.add(202, { ppid: 201 });
    watch.scan();
    fs.remove(201);
    fs.remove(200);
    fs.add(202, { ppid: QM }); // reparented to qm, the subreaper
    watch.scan();
    expect(pids()).toEqual([202]);
  });

  test("an orphan reparented to qm between scans is adopted by its mark, only ours", () => {
    watch.register("m", 200, null);
    fs.add(400, { ppid: QM }, MARK);
    fs.add(401, { ppid: QM }, [`QM_OWNER=${QM}:6`, "QM_MODEL=m"]); // an earlier qm's, same pid
    fs.add(402, { ppid: QM }, MARK);
    spawned.push(402); // one Bun spawned is never adopted
    fs.add(403, { ppid: 400 }); // the adopted one's child comes along
    watch.scan();
    expect(pids().sort()).toEqual([400, 403]);
  });
});

describe("signals", () => {
  test("each descendant's start time is checked before it is signalled: a reused pid is spared", () => {
    watch.register("m", 200, null);
    fs.add(201, { ppid: 200, pgrp: 200, session: 200, start: 60 });
    fs.add(202, { ppid: 201, start: 61 });
    watch.scan();
    fs.add(202, { ppid: 1, start: 999 }); // 202 died; the pid now names another process
    expect(watch.signal(200, "SIGKILL")).toBe(1);
    expect(kills).toEqual(["SIGKILL 201"]);
    expect(watch.running(200)).toBe(true);
    fs.remove(201);
    expect(watch.running(200)).toBe(false);
  });

  test("outsideGroup skips the members a process group signal reaches anyway", () => {
    watch.register("m", 200, null);
    fs.add(201, { ppid: 200, pgrp: 200, session: 200 });
    fs.add(202, { ppid: 201 });
    watch.scan();
    watch.signal(200, "SIGTERM", { outsideGroup: true });
    expect(kills).toEqual(["SIGTERM 202"]);
  });

  test("killAllSync SIGKILLs every recorded descendant of every model", () => {
    watch.register("m", 200, null);
    fs.add(201, { ppid: 200, pgrp: 200, session: 200 });
    fs.add(500, { ppid: QM, start: 70 });
    spawned.push(500);
    watch.register("n", 500, null);
    fs.add(501, { ppid: 500 });
    expect(watch.killAllSync()).toBe(2);
    expect(kills.sort()).toEqual(["SIGKILL 201", "SIGKILL 501"]);
  });
});

describe("zombies reparented to qm", () => {
  test("reaped when known as the model's; never one Bun spawned, never a stranger's", () => {
    watch.register("m", 200, null);
    fs.add(202, { ppid: 201 });
    fs.add(201, { ppid: 200, pgrp: 200, session: 200 });
    watch.scan();
    fs.add(202, { ppid: QM, state: "Z" }); // recorded, died after it was reparented
    fs.add(203, { ppid: QM, state: "Z", pgrp: 200, session: 200 }); // the model's session
    fs.add(204, { ppid: QM, state: "Z", session: 999 }); // not from a session qm made
    fs.add(205, { ppid: QM, state: "Z", pgrp: 200, session: 200 });
    spawned.push(205); // Bun's own child: Bun reaps it (reaping it here would crash Bun)
    fs.add(200, { ppid: QM, start: 50, state: "Z" }); // the leader itself, not reaped yet
    watch.scan();
    expect(reaped.sort()).toEqual([202, 203]);
    expect(pids()).toEqual([201]);
  });

  test("orphans of a cmd_stop's session are reaped too, after the model is gone", () => {
    watch.noteSession(600);
    fs.add(601, { ppid: QM, state: "Z", pgrp: 600, session: 600 });
    watch.scan();
    expect(reaped).toEqual([601]);
  });

  test("unregister forgets the model", () => {
    watch.register("m", 200, null);
    watch.unregister(200);
    expect(watch.snapshot()).toEqual([]);
    expect(watch.signal(200, "SIGKILL")).toBe(0);
  });
});

describe("waiting for what a stopped model left", () => {
  /** Counts the full reads of the table. */
  function countLists(): () => number {
    let n = 0;
    const list = fs.list.bind(fs);
    fs.list = () => {
      n++;
      return list();
    };
    return () => n;
  }

  test("nothing recorded after the scan: nothing to wait for, no second read of the table", async () => {
    watch.register("m", 200, null);
    fs.remove(200);
    watch.scan();
    const lists = countLists();
    expect(await watch.waitGone(200, 500)).toBe(true);
    expect(lists()).toBe(0);
  });

  test("a recorded descendant: once it is gone, one more scan reaps its zombie", async () => {
    watch.register("m", 200, null);
    fs.add(201, { ppid: 200, pgrp: 200, session: 200 });
    watch.scan();
    fs.remove(200);
    fs.add(201, { ppid: QM, pgrp: 200, session: 200, state: "Z" }); // killed, reparented
    const lists = countLists();
    expect(await watch.waitGone(200, 500)).toBe(true);
    expect(lists()).toBe(1);
    expect(reaped).toEqual([201]);
  });
});

describe("the periodic scan where reading the table runs a command (Darwin's ps)", () => {
  /** A table whose `listAsync` answers only when the test says (a `ps` still running). */
  function slowTable() {
    const pending: ((all: ReturnType<FakeProc["list"]>) => void)[] = [];
    const slow = Object.assign(fs, {
      listAsync: () =>
        new Promise<ReturnType<FakeProc["list"]>>((resolve) => {
          pending.push(resolve);
        }),
    });
    const timers = new FakeTimers();
    const w = new TreeWatch({
      fs: slow,
      self: { pid: QM, start: 5 },
      kill: () => {},
      reap: () => false,
      spawned: () => spawned,
      scanIntervalMs: 1000,
      timers,
    });
    return { w, timers, pending };
  }

  /** One reading under way, nothing recorded from it yet; once it answers, 201 is recorded. */
  async function recordedOnceRead(
    w: TreeWatch,
    pending: ((all: ReturnType<FakeProc["list"]>) => void)[],
  ): Promise<void> {
    expect(pending).toHaveLength(1);
    expect(w.snapshot()[0]!.descendants).toEqual([]);
    pending[0]!(fs.list());
    await Promise.resolve();
    expect(w.snapshot()[0]!.descendants.map((d) => d.pid)).toEqual([201]);
  }

  test("reads without blocking, then records what it read; one reading at a time", async () => {
    const { w, timers, pending } = slowTable();
    w.register("m", 200, null);
    fs.add(201, { ppid: 200, pgrp: 200, session: 200 });
    timers.advance(1000);
    timers.advance(1000); // the first reading is still under way: no second one
    await recordedOnceRead(w, pending);
    w.unregister(200);
    timers.advance(1000);
  });

  test("the scan soon after readiness reads without blocking too", async () => {
    const { w, timers, pending } = slowTable();
    w.register("m", 200, null);
    fs.add(201, { ppid: 200, pgrp: 200, session: 200 });
    w.scanSoon();
    w.scanSoon(); // one pending at a time
    timers.advance(0);
    await recordedOnceRead(w, pending);
    w.unregister(200);
    timers.advance(1000);
  });

  test("a reading older than a scan made meanwhile (a stop's) is dropped, not applied over it", async () => {
    const { w, timers, pending } = slowTable();
    w.register("m", 200, null);
    const before = fs.list(); // what the background `ps` saw: no descendant yet
    timers.advance(1000);
    fs.add(201, { ppid: 200, pgrp: 200, session: 200 });
    fs.add(202, { ppid: 201 }); // left the group: only the tree links tie it to the model
    w.scan();
    pending[0]!(before);
    await Promise.resolve();
    expect(
      w
        .snapshot()[0]!
        .descendants.map((d) => d.pid)
        .sort(),
    ).toEqual([201, 202]);
    w.unregister(200);
    timers.advance(1000);
  });
});
