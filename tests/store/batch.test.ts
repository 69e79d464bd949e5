/** The write queue: nothing written until the flush; one transaction; a failing write given up. */
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../src/shared/log.ts";
import { Batch, FLUSH_SLICE, MAX_PENDING, STEP_LOG_BYTES } from "../../src/store/batch.ts";
import { FakeTimers, turnTimers } from "../support/fake-timers.ts";

function setup() {
  const transactions: number[] = [];
  const lines: string[] = [];
  const log = createLogger("warn", (l) => lines.push(l));
  let inside = false;
  const written: string[] = [];
  const batch = new Batch((fn) => {
    inside = true;
    const before = written.length;
    fn();
    inside = false;
    transactions.push(written.length - before);
  }, log);
  const write = (name: string) => () => {
    if (!inside) throw new Error("written outside the transaction");
    written.push(name);
    return name.length;
  };
  return { batch, transactions, written, lines, write };
}

describe("the queue", () => {
  test("queued, then written in one transaction once a second on the timers", () => {
    const t = setup();
    const timers = new FakeTimers();
    t.batch.start(timers);
    t.batch.add(t.write("a"));
    t.batch.add(t.write("b"));
    expect(t.written).toEqual([]);
    timers.advance(999);
    expect(t.written).toEqual([]);
    timers.advance(1);
    expect(t.written).toEqual(["a", "b"]);
    expect(t.transactions).toEqual([2]);
    t.batch.add(t.write("c"));
    timers.advance(1000);
    expect(t.transactions).toEqual([2, 1]);
    // An empty queue writes nothing.
    timers.advance(5000);
    expect(t.transactions).toEqual([2, 1]);
    t.batch.add(t.write("d"));
    t.batch.close();
    expect(t.written).toEqual(["a", "b", "c", "d"]);
    expect(timers.pending).toBe(0);
  });

  test("a long queue is written a slice per turn: FLUSH_SLICE writes per transaction, in order", () => {
    const t = setup();
    const timers = new FakeTimers();
    // Each further slice waits for the next turn: a 0 ms timer of its own.
    let turns = 0;
    const set = timers.set.bind(timers);
    timers.set = (fn, ms) => {
      if (ms === 0) turns++;
      return set(fn, ms);
    };
    t.batch.start(timers);
    const n = 2 * FLUSH_SLICE + 7;
    for (let i = 0; i < n; i++) t.batch.add(t.write(String(i)));
    timers.advance(1000);
    expect(t.transactions).toEqual([FLUSH_SLICE, FLUSH_SLICE, 7]);
    expect(turns).toBe(2);
    expect(t.written).toEqual(Array.from({ length: n }, (_, i) => String(i)));
    // close() writes whatever is left at once, in one transaction, a slice pending or not.
    for (let i = 0; i < n; i++) t.batch.add(t.write(`c${i}`));
    t.batch.close();
    expect(t.transactions.slice(3)).toEqual([n]);
    expect(timers.pending).toBe(0);
  });

  test("bounded: past MAX_PENDING the oldest go, said once", () => {
    const t = setup();
    for (let i = 0; i < MAX_PENDING + 5; i++) t.batch.add(t.write(String(i)));
    expect(t.batch.size).toBe(MAX_PENDING);
    expect(t.lines).toHaveLength(1);
    t.batch.flush();
    expect(t.written[0]).toBe("5");
  });

  test("a failing write gives the database up: logged once, nothing more is queued", () => {
    const t = setup();
    t.batch.add(() => {
      throw new Error("disk I/O error");
    });
    t.batch.flush();
    expect(t.batch.failed).toBe("disk I/O error");
    expect(t.lines).toHaveLength(1);
    expect(t.lines[0]).toContain(
      "the database failed (disk I/O error); qm goes on with memory only",
    );
    t.batch.add(t.write("x"));
    t.batch.flush();
    expect(t.written).toEqual([]);
    expect(t.batch.size).toBe(0);
  });
});

describe("chores", () => {
  /** A chore of `n` steps, each recording itself in `log`. */
  function* steps(log: string[], n: number) {
    for (let i = 0; i < n; i++) {
      log.push(`step${i}`);
      yield;
    }
  }

  test("a step per turn of the event loop, after the queue's slices; one chore at a time; writes between flushes wait", () => {
    const t = setup();
    const { timers, turns, turn } = turnTimers();
    t.batch.start(timers);
    const log: string[] = [];
    for (let i = 0; i < FLUSH_SLICE + 1; i++) t.batch.add(t.write(String(i)));
    timers.advance(1000);
    expect(t.transactions).toEqual([FLUSH_SLICE]);
    t.batch.startChore(steps(log, 3));
    t.batch.startChore(steps(["other"], 1)); // ignored: one runs
    // Nothing runs until the next turn, and the queue's slice goes first.
    expect(log).toEqual([]);
    turn();
    expect(t.transactions).toEqual([FLUSH_SLICE, 1]);
    expect(log).toEqual([]);
    turn();
    expect(log).toEqual(["step0"]);
    // A write queued between flushes waits for the next one; the steps go on meanwhile (the
    // log gets quiet spells for its checkpoints, however busy qm is).
    t.batch.add(t.write("late"));
    turn();
    expect(log).toEqual(["step0", "step1"]);
    expect(t.written.at(-1)).not.toBe("late");
    // The next flush writes it at the next turn, before the chore's last step.
    timers.advance(1000);
    turn();
    expect(t.written.at(-1)).toBe("late");
    expect(log).toEqual(["step0", "step1"]);
    turn();
    expect(log).toEqual(["step0", "step1", "step2"]);
    turn(); // the generator's end: no further turn
    expect(turns.size).toBe(0);
    // That one is done: a new one may start, from the next turn.
    t.batch.startChore(steps(log, 1));
    expect(log).toHaveLength(3);
    turn();
    expect(log.at(-1)).toBe("step0");
    t.batch.close();
    expect(turns.size).toBe(0);
    expect(timers.pending).toBe(0);
  });

  test("the log written is counted: each write's bytes, and STEP_LOG_BYTES per step of a chore", () => {
    const t = setup();
    t.batch.add(t.write("abc"));
    t.batch.add(t.write("de"));
    t.batch.flush();
    t.batch.startChore(steps([], 2));
    expect(t.batch.logBytes).toBe(5 + 3 * STEP_LOG_BYTES); // two steps, and the one that ends it
  });

  test("a chore held back (a checkpoint under way) waits for resume; the queue's slices do not", () => {
    let mayStep = false;
    const written: string[] = [];
    const batch = new Batch(
      (fn) => fn(),
      createLogger("warn", () => {}),
      () => {},
      () => {},
      () => mayStep,
    );
    const { timers, turns, turn } = turnTimers();
    batch.start(timers);
    const log: string[] = [];
    batch.startChore(steps(log, 2));
    turn();
    expect(log).toEqual([]);
    expect(turns.size).toBe(0); // no turn spins while it waits
    batch.add(() => written.push("x"));
    timers.advance(1000);
    expect(written).toEqual(["x"]);
    expect(turns.size).toBe(0);
    mayStep = true;
    batch.resume();
    turn();
    expect(log).toEqual(["step0"]);
    turn();
    expect(log).toEqual(["step0", "step1"]);
    batch.close();
  });

  test("close drops a chore under way; without timers a chore runs whole at once", () => {
    const t = setup();
    const { timers, turns, turn } = turnTimers();
    t.batch.start(timers);
    const log: string[] = [];
    t.batch.startChore(steps(log, 5));
    turn();
    expect(log).toEqual(["step0"]);
    t.batch.close();
    expect(turns.size).toBe(0);
    expect(log).toEqual(["step0"]);
    const idle = setup();
    const all: string[] = [];
    idle.batch.startChore(steps(all, 4));
    expect(all).toHaveLength(4);
  });

  test("a step that throws gives the database up", () => {
    const t = setup();
    t.batch.startChore(
      (function* () {
        yield;
        throw new Error("database disk image is malformed");
      })(),
    );
    expect(t.batch.failed).toBe("database disk image is malformed");
    expect(t.lines[0]).toContain("qm goes on with memory only");
  });
});
