/** The write queue: nothing written until the flush; one transaction; a failing write given up. */
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../src/shared/log.ts";
import { Batch, FLUSH_SLICE, MAX_PENDING } from "../../src/store/batch.ts";
import { FakeTimers } from "../support/fake-timers.ts";

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
