import { describe, expect, test } from "bun:test";
import { OwnProcesses, type ProcessView } from "../../src/gpu/own-processes.ts";

const p = (state: ProcessView["state"], pid: number | null = null): ProcessView => ({ state, pid });

describe("OwnProcesses", () => {
  test("ready pids are expected on the GPU; starting and stopping ones are ours but optional", () => {
    const own = new OwnProcesses(5000);
    expect(own.look(0, [p("ready", 1), p("starting", 2), p("stopping", 3), p("stopped")])).toEqual({
      ready: [1],
      transient: [2, 3],
      idle: false,
    });
  });

  test("a sleeping process (evict = sleep) is ours but not required on the GPU, and not idle", () => {
    const own = new OwnProcesses(5000);
    const asleep: ProcessView = { state: "ready", pid: 7, asleep: true };
    expect(own.look(0, [p("ready", 1), asleep])).toEqual({
      ready: [1],
      transient: [7],
      idle: false,
    });
  });

  test("idle only with every process stopped and none alive", () => {
    expect(new OwnProcesses().look(0, [p("stopped"), p("stopped")]).idle).toBe(true);
    expect(new OwnProcesses().look(0, [p("starting", 4)]).idle).toBe(false);
    // A process reported stopped that still has a pid (its leftovers not yet reaped).
    expect(new OwnProcesses().look(0, [p("stopped", 4)]).idle).toBe(false);
    expect(new OwnProcesses().look(0, []).idle).toBe(true);
  });

  test("a pid that went away stays ours, and qm not idle, until its memory had time to settle", () => {
    const own = new OwnProcesses(5000);
    own.look(0, [p("ready", 7)]);
    expect(own.look(1000, [p("stopped")])).toEqual({ ready: [], transient: [7], idle: false });
    expect(own.settling(5999)).toBe(true);
    expect(own.look(5999, [p("stopped")])).toEqual({ ready: [], transient: [7], idle: false });
    expect(own.look(6000, [p("stopped")])).toEqual({ ready: [], transient: [], idle: true });
    expect(own.settling(6000)).toBe(false);
  });

  test("a release it did not see (an eviction between looks) also keeps qm from idle", () => {
    const own = new OwnProcesses(5000);
    expect(own.settling(0)).toBe(false);
    own.released(100);
    expect(own.look(200, []).idle).toBe(false);
    expect(own.settledBy()).toBe(5100);
    expect(own.look(5100, []).idle).toBe(true);
  });

  test("a pid back among the living (reused by a new model) is no longer a leftover", () => {
    const own = new OwnProcesses(5000);
    own.look(0, [p("ready", 7)]);
    own.look(10, []);
    expect(own.look(20, [p("starting", 7)]).transient).toEqual([7]);
  });
});
