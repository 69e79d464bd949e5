import { describe, expect, test } from "bun:test";
import { Deadline } from "../../src/proxy/deadline.ts";
import { QmError } from "../../src/shared/errors.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";

function deadline(firstByteMs: number, stallMs: number) {
  const timers = new FakeTimers();
  const reports: string[] = [];
  const d = new Deadline({
    model: "m",
    firstByteMs,
    stallMs,
    timers,
    report: { stalled: () => reports.push("stalled"), answered: () => reports.push("answered") },
  });
  return { d, timers, reports };
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

  test("end: the limits stop (no timer left); an answered end is reported, a failed one not", () => {
    const ok = deadline(1000, 500);
    ok.d.start();
    ok.d.headers();
    ok.d.reading();
    ok.d.end(true);
    ok.timers.advance(10_000);
    expect(ok.d.signal.aborted).toBe(false);
    expect(ok.timers.pending).toBe(0);
    expect(ok.reports).toEqual(["answered"]);
    const failed = deadline(1000, 500);
    failed.d.start();
    failed.d.end(false);
    failed.d.end(true);
    expect(failed.reports).toEqual([]);
    expect(failed.timers.pending).toBe(0);
  });

  test("0 turns a limit off; a model with neither gets no deadline at all", () => {
    const onlyStall = deadline(0, 500);
    onlyStall.d.start();
    onlyStall.timers.advance(3_600_000);
    expect(onlyStall.d.signal.aborted).toBe(false);
    const noStall = deadline(1000, 0);
    noStall.d.start();
    noStall.d.headers();
    noStall.d.reading();
    noStall.timers.advance(3_600_000);
    expect(noStall.d.signal.aborted).toBe(false);

    const cfg = config(
      `[models.a]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\n` +
        `[models.b]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nfirst_byte_timeout_s = 0\nstall_timeout_s = 0\n`,
    );
    expect(Deadline.forModel(cfg.models.a!)).toBeInstanceOf(Deadline);
    expect(Deadline.forModel(cfg.models.b!)).toBeNull();
  });
});
