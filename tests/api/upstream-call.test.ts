import { describe, expect, test } from "bun:test";
import { callGuards } from "../../src/api/upstream-call.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";

const cfg = config(
  `[models.m]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nfirst_byte_timeout_s = 1\nstall_timeout_s = 0.5\n`,
);
const model = cfg.models.m!;

function gateway() {
  const reports: string[] = [];
  const gw = {
    config: cfg,
    reportStall: (id: string) => reports.push(`stall ${id}`),
    reportAnswered: (id: string) => reports.push(`answered ${id}`),
    stderrTail: () => [],
  };
  return { gw: gw as unknown as Parameters<typeof callGuards>[0], reports };
}

describe("callGuards", () => {
  test("an ordinary call: both limits, and a stall is reported against the model", () => {
    const { gw, reports } = gateway();
    const timers = new FakeTimers();
    const d = callGuards(gw, model, { timers }).deadline!;
    d.start();
    d.headers();
    d.reading();
    timers.advance(500);
    expect(d.signal.aborted).toBe(true);
    expect(reports).toEqual(["stall m"]);
  });

  test("a call that may idle (a GET through /upstream): first byte only, never counted", () => {
    const { gw, reports } = gateway();
    const timers = new FakeTimers();
    const d = callGuards(gw, model, { timers, mayIdle: true }).deadline!;
    d.start();
    d.headers();
    d.reading();
    timers.advance(3_600_000);
    expect(d.signal.aborted).toBe(false);
    d.end(true);
    const late = callGuards(gw, model, { timers, mayIdle: true }).deadline!;
    late.start();
    timers.advance(1000);
    expect(late.signal.aborted).toBe(true);
    expect(reports).toEqual([]);
  });
});
