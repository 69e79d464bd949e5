import { describe, expect, test } from "bun:test";
import { GroupPolicy } from "../../src/policy/group.ts";
import { EventClock } from "../../src/scheduler/event-clock.ts";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { FakeEffects } from "../support/fake-effects.ts";
import { modelsToml } from "../support/harness.ts";

/** A fake clock that counts how often it is read. */
class CountingClock extends FakeClock {
  reads = 0;
  override now(): number {
    this.reads++;
    return super.now();
  }
}

describe("EventClock", () => {
  test("inside an event the time is the one read at its start; outside, the clock's own", () => {
    const wall = new CountingClock(100);
    const clock = new EventClock(wall);
    clock.begin();
    wall.advance(50);
    expect([clock.now(), clock.now()]).toEqual([100, 100]);
    expect(wall.reads).toBe(1);
    clock.end();
    expect(clock.now()).toBe(150);
  });

  test("the scheduler reads the clock once per event, however many steps decide it", () => {
    const cfg = config(modelsToml("a"));
    const wall = new CountingClock(1000);
    const fx = new FakeEffects();
    const sched = new Scheduler(cfg, new GroupPolicy(cfg), fx, wall);
    sched.request({ id: 1, model: "a" });
    sched.swapDone(fx.lastSwap().id, { ok: true });
    wall.reads = 0;
    // A request for a ready model is granted at once; serveDone drains, holds and re-arms.
    sched.request({ id: 2, model: "a" });
    sched.serveDone(2);
    expect(fx.granted).toContain(2);
    expect(wall.reads).toBe(2);
  });
});
