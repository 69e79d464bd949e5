import { describe, expect, test } from "bun:test";
import { Call } from "../../../src/api/exchange/call.ts";
import { Observer } from "../../../src/api/exchange/observer.ts";
import type { Gateway, Lease } from "../../../src/api/gateway.ts";
import { loadConfigText } from "../../../src/config/index.ts";
import type { Deadline } from "../../../src/proxy/deadline.ts";
import { OPENAI_TOOL_CALLS } from "../../../src/proxy/end-scan.ts";
import type { ServeOutcome } from "../../../src/scheduler/types.ts";
import { silentLogger } from "../../../src/shared/log.ts";
import { SWEEP_PERIOD_MS, Sweep } from "../../../src/shared/sweep.ts";
import { FakeTimers } from "../../support/fake-timers.ts";

const cfg = loadConfigText(
  `[models.m]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nfirst_byte_timeout_s = 1\nstall_timeout_s = 0.5\n`,
  { file: "t.toml", env: {}, isPortFree: () => true },
);
const model = cfg.models.m!;

/** Calls swept every `periodMs` of a fake clock: 1 ms to the millisecond, or the real period. */
function gateway(periodMs = 1) {
  const reports: string[] = [];
  const timers = new FakeTimers();
  const calls = new Sweep<Deadline>(timers, periodMs);
  const gw = {
    config: cfg,
    calls,
    reportStall: (id: string) => reports.push(`stall ${id}`),
    reportAnswered: (id: string) => reports.push(`answered ${id}`),
    stderrTail: () => ["last words"],
  };
  return { gw: gw as unknown as Gateway, reports, timers, calls };
}

function lease(): { lease: Lease; released: (ServeOutcome | undefined)[] } {
  const released: (ServeOutcome | undefined)[] = [];
  return {
    released,
    lease: { model, waitedMs: 0, release: (o) => released.push(o) },
  };
}

describe("Call", () => {
  test("an ordinary call: both limits, and a stall is reported against the model", () => {
    const { gw, reports, timers } = gateway();
    const d = new Call(gw, model, new AbortController().signal, silentLogger).deadline;
    d.start();
    d.headers();
    d.reading();
    timers.advance(500);
    expect(d.signal.aborted).toBe(true);
    expect(reports).toEqual(["stall m"]);
  });

  test("a call that may idle (a GET through /upstream): first byte only, never counted", () => {
    // An hour of the fake clock, swept at the real period (a 1 ms sweep would tick 3.6 M times).
    const { gw, reports, timers } = gateway(SWEEP_PERIOD_MS);
    const signal = new AbortController().signal;
    const d = new Call(gw, model, signal, silentLogger, { mayIdle: true }).deadline;
    d.start();
    d.headers();
    d.reading();
    timers.advance(3_600_000);
    expect(d.signal.aborted).toBe(false);
    d.end(true);
    const late = new Call(gw, model, signal, silentLogger, { mayIdle: true }).deadline;
    late.start();
    timers.advance(1000);
    expect(late.signal.aborted).toBe(true);
    expect(reports).toEqual([]);
  });

  test("finish releases the lease once, with how the answer ended, and ends the deadline", () => {
    const { gw, reports, calls } = gateway();
    const observer = new Observer(OPENAI_TOOL_CALLS);
    const call = new Call(gw, model, new AbortController().signal, silentLogger, { observer });
    const l = lease();
    call.granted(l.lease);
    expect(call.base).toBe("http://127.0.0.1:9");
    observer.chunk(new TextEncoder().encode('{"finish_reason":"tool_calls"}'));
    call.ended({ kind: "done" });
    call.finish(false);
    call.ended({ kind: "cancelled" });
    expect(l.released).toEqual([{ toolCalls: true }]);
    expect(reports).toEqual(["answered m"]);
    expect(calls.size).toBe(0);
  });

  test("a grant that lands after the end is released at once; a translator's word counts", () => {
    const { gw } = gateway();
    const early = new Call(gw, model, new AbortController().signal, silentLogger);
    early.finish(false);
    const l = lease();
    early.granted(l.lease);
    expect(l.released).toEqual([undefined]);
    const observer = new Observer(null);
    const translated = new Call(gw, model, new AbortController().signal, silentLogger, {
      observer,
    });
    const t = lease();
    translated.granted(t.lease);
    observer.ended(true);
    translated.finish(true);
    expect(t.released).toEqual([{ toolCalls: true }]);
  });
});
