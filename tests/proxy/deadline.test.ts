import { describe, expect, test } from "bun:test";
import { Deadline } from "../../src/proxy/deadline.ts";
import { QmError } from "../../src/shared/errors.ts";
import { SWEEP_PERIOD_MS, Sweep } from "../../src/shared/sweep.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";

/**
 * A deadline swept every `periodMs` of a fake clock: 1 ms by default, to check limits to the
 * millisecond; the real sweep looks every 100 ms, which is what an hour-long check uses.
 */
function deadline(firstByteMs: number, stallMs: number, client?: AbortSignal, periodMs = 1) {
  const timers = new FakeTimers();
  const sweep = new Sweep<Deadline>(timers, periodMs);
  const reports: string[] = [];
  const d = new Deadline({
    model: "m",
    firstByteMs,
    stallMs,
    sweep,
    client,
    report: { stalled: () => reports.push("stalled"), answered: () => reports.push("answered") },
  });
  return { d, timers, reports, sweep };
}

describe("Deadline", () => {
  test("no headers within the first-byte limit: the signal aborts with a 504 QmError", () => {
    const { d, timers, reports } = deadline(1000, 500);
    d.start();
    timers.advance(999);
    expect(d.signal.aborted).toBe(false);
    timers.advance(1);
    expect(d.signal.aborted).toBe(true);
    const reason = d.signal.reason as QmError;
    expect(reason).toBeInstanceOf(QmError);
    expect(reason.code).toBe("upstream_timeout");
    expect(reason.status).toBe(504);
    expect(reason.message).toBe('model "m" sent no response within 1 s (first_byte_timeout_s)');
    expect(d.timedOut).toBe(reason);
    expect(reports).toEqual(["stalled"]);
  });

  test("headers in time: then only a read that waits longer than the stall limit expires", () => {
    const { d, timers, reports } = deadline(1000, 500);
    d.start();
    timers.advance(900);
    d.headers();
    timers.advance(5000); // no read pending yet: nothing is the upstream's delay
    for (let i = 0; i < 10; i++) {
      d.reading();
      timers.advance(499);
      d.read();
    }
    expect(d.signal.aborted).toBe(false);
    d.reading();
    timers.advance(500);
    expect(d.signal.aborted).toBe(true);
    expect((d.signal.reason as QmError).message).toBe(
      'model "m" sent nothing for 0.5 s mid-answer (stall_timeout_s)',
    );
    expect(reports).toEqual(["stalled"]);
  });

  test("time spent writing to a slow client never counts", () => {
    const { d, timers } = deadline(0, 500);
    d.start();
    d.headers();
    d.reading();
    timers.advance(400);
    d.read();
    timers.advance(60_000); // the client reads slowly; no read of the upstream is pending
    d.reading();
    timers.advance(499);
    expect(d.signal.aborted).toBe(false);
  });

  test("end: the limits stop (it leaves the sweep, whose timer stops); an answered end is reported, a failed one not", () => {
    const ok = deadline(1000, 500);
    ok.d.start();
    ok.d.headers();
    ok.d.reading();
    ok.d.end(true);
    expect(ok.sweep.size).toBe(0);
    ok.timers.advance(10_000);
    expect(ok.d.signal.aborted).toBe(false);
    expect(ok.timers.pending).toBe(0);
    expect(ok.reports).toEqual(["answered"]);
    const failed = deadline(1000, 500);
    failed.d.start();
    failed.d.end(false);
    failed.d.end(true);
    expect(failed.reports).toEqual([]);
    expect(failed.sweep.size).toBe(0);
  });

  test("the client leaving aborts the call at the next sweep, with no timeout and no stall", () => {
    const client = new AbortController();
    const { d, timers, reports, sweep } = deadline(1000, 500, client.signal);
    d.start();
    timers.advance(10);
    client.abort();
    expect(d.signal.aborted).toBe(false);
    timers.advance(1);
    expect(d.signal.aborted).toBe(true);
    expect(d.timedOut).toBeNull();
    expect(reports).toEqual([]);
    expect(sweep.size).toBe(0);
    // A client already gone: aborted from the start, never live.
    const gone = deadline(1000, 500, client.signal);
    expect(gone.d.signal.aborted).toBe(true);
    expect(gone.sweep.size).toBe(0);
  });

  test("interrupt (shutdown's cut) ends the call with its reason; cancel without one", () => {
    const { d, reports } = deadline(1000, 500);
    d.start();
    const reason = new QmError("shutting_down", "cut");
    d.interrupt(reason);
    expect(d.signal.reason).toBe(reason);
    expect(d.timedOut).toBe(reason);
    expect(reports).toEqual([]);
    const c = deadline(1000, 500);
    c.d.cancel();
    expect(c.d.signal.aborted).toBe(true);
    expect(c.d.timedOut).toBeNull();
    expect(c.sweep.size).toBe(0);
  });

  test("0 turns a limit off; forModel takes the model's limits, mayIdle drops the stall limit", () => {
    const onlyStall = deadline(0, 500, undefined, SWEEP_PERIOD_MS);
    onlyStall.d.start();
    onlyStall.timers.advance(3_600_000);
    expect(onlyStall.d.signal.aborted).toBe(false);
    const noStall = deadline(1000, 0, undefined, SWEEP_PERIOD_MS);
    noStall.d.start();
    noStall.d.headers();
    noStall.d.reading();
    noStall.timers.advance(3_600_000);
    expect(noStall.d.signal.aborted).toBe(false);

    const cfg = config(
      `[models.a]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\n` +
        `[models.b]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nfirst_byte_timeout_s = 0\nstall_timeout_s = 0\n`,
    );
    const timers = new FakeTimers();
    const sweep = new Sweep<Deadline>(timers, 100);
    const a = Deadline.forModel(cfg.models.a!, { sweep });
    const idle = Deadline.forModel(cfg.models.a!, { sweep, mayIdle: true });
    const b = Deadline.forModel(cfg.models.b!, { sweep });
    for (const d of [a, idle, b]) {
      d.start();
      d.headers();
      d.reading();
    }
    // a: the default stall_timeout_s (120 s); mayIdle and b: no stall limit.
    timers.advance(120_000);
    expect(a.signal.aborted).toBe(true);
    expect(idle.signal.aborted).toBe(false);
    expect(b.signal.aborted).toBe(false);
    idle.end(false);
    b.end(false);
  });
});
