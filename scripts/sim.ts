// `bun run sim`: a deterministic simulation of two agent loops on two models that share one GPU
// (one swap group), driven through the real scheduler with a fake clock. Each loop asks its model,
// generates, makes a tool call, and asks again; every round but the last ends in tool calls.
// Printed for hold_on = "request", hold_on = "tool_calls" and holds off: swap count, each loop's
// total time and the makespan; then, holds off, the cost of a swap per eviction mode: the
// models stopped and loaded cold (`evict = "stop"`) or put to sleep and woken (`evict = "sleep"`).
import { loadConfigText } from "../src/config/index.ts";
import { GroupPolicy } from "../src/policy/group.ts";
import { Scheduler } from "../src/scheduler/scheduler.ts";
import type { Effects, Swap } from "../src/scheduler/types.ts";

export interface SimParams {
  rounds: number;
  toolMs: number;
  loadMs: number;
  genMs: number;
  stopMs: number;
  /** `evict = "sleep"`: how long putting a model to sleep and waking it take. */
  sleepMs: number;
  wakeMs: number;
}

export const DEFAULTS: SimParams = {
  rounds: 20,
  toolMs: 2000,
  loadMs: 8000,
  genMs: 3000,
  stopMs: 500,
  sleepMs: 500,
  wakeMs: 1500,
};

/** `evict`: the models' eviction mode (default "stop"). */
type Mode = { name: string; scheduler: string; evict?: "stop" | "sleep" };
export const MODES: Mode[] = [
  { name: 'hold_on = "request"', scheduler: 'hold_ms = 10000\nhold_on = "request"' },
  { name: 'hold_on = "tool_calls"', scheduler: 'hold_ms = 10000\nhold_on = "tool_calls"' },
  { name: "holds off", scheduler: "hold_ms = 0" },
];

/** Swap cost per eviction mode, holds off (every round swaps). */
export const EVICT_MODES: Mode[] = [
  { name: 'evict = "stop"', scheduler: "hold_ms = 0", evict: "stop" },
  { name: 'evict = "sleep"', scheduler: "hold_ms = 0", evict: "sleep" },
];

export interface SimResult {
  mode: string;
  swaps: number;
  loopMs: number[];
  makespanMs: number;
}

/** A tiny discrete-event loop: callbacks run in time order (ties in insertion order). */
class Timeline {
  now = 0;
  private seq = 0;
  private readonly events: { at: number; seq: number; fn: () => void }[] = [];
  at(delay: number, fn: () => void): void {
    this.events.push({ at: this.now + delay, seq: this.seq++, fn });
    this.events.sort((a, b) => a.at - b.at || a.seq - b.seq);
  }
  run(limitMs: number): void {
    for (let e = this.events.shift(); e && e.at <= limitMs; e = this.events.shift()) {
      this.now = e.at;
      e.fn();
    }
  }
}

export function simulate(mode: Mode, p: SimParams = DEFAULTS): SimResult {
  const evict = `evict = "${mode.evict ?? "stop"}"\n`;
  const config = loadConfigText(
    `[scheduler]\n${mode.scheduler}\npatience_ms = 300000\n\n` +
      `[models.m1]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\n${evict}` +
      `[models.m2]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\n${evict}`,
    { file: "sim.toml", env: {}, isPortFree: () => true },
  );
  const t = new Timeline();
  let swaps = 0;
  const loops = [
    { model: "m1", round: 0, doneAt: -1 },
    { model: "m2", round: 0, doneAt: -1 },
  ];
  const byRequest = new Map<number, (typeof loops)[number]>();
  let nextId = 1;
  let wakeAt: number | null = null;

  const effects: Effects = {
    grant(id) {
      const loop = byRequest.get(id)!;
      t.at(p.genMs, () => {
        loop.round++;
        const last = loop.round >= p.rounds;
        sched.serveDone(id, { toolCalls: !last });
        if (last) loop.doneAt = t.now;
        else t.at(p.toolMs, () => ask(loop));
      });
      return true;
    },
    fail(id, error) {
      throw new Error(`request ${id} failed: ${error.message}`);
    },
    startSwap(swap: Swap) {
      swaps++;
      const asleep = swap.sleep ?? [];
      const stop = swap.evict.length === 0 ? 0 : asleep.length > 0 ? p.sleepMs : p.stopMs;
      const load = swap.wake ? p.wakeMs : p.loadMs;
      t.at(stop + load, () => sched.swapDone(swap.id, { ok: true, asleep }));
    },
    abortSwap(swapId) {
      throw new Error(`swap ${swapId} aborted: nothing in the simulation unloads or leaves`);
    },
    sleepModels(models) {
      t.at(p.stopMs, () => {
        for (const m of models) sched.slept(m, true);
      });
    },
    stopModels(models) {
      t.at(p.stopMs, () => {
        for (const m of models) sched.stopped(m);
      });
    },
    position() {},
    loading() {},
    wakeAt(at) {
      wakeAt = at;
      if (at !== null) {
        t.at(Math.max(0, at - t.now), () => {
          if (wakeAt !== null && t.now >= wakeAt) sched.wake();
        });
      }
    },
    holdChanged() {},
    stateChanged() {},
  };
  const sched = new Scheduler(config, new GroupPolicy(config), effects, { now: () => t.now });
  const ask = (loop: (typeof loops)[number]) => {
    const id = nextId++;
    byRequest.set(id, loop);
    sched.request({ id, model: loop.model });
  };
  for (const loop of loops) ask(loop);
  t.run(24 * 3600 * 1000);
  const loopMs = loops.map((l) => l.doneAt);
  if (loopMs.some((ms) => ms < 0)) throw new Error(`${mode.name}: a loop never finished`);
  return { mode: mode.name, swaps, loopMs, makespanMs: Math.max(...loopMs) };
}

if (import.meta.main) {
  const results = MODES.map((m) => simulate(m));
  const s = (ms: number) => `${(ms / 1000).toFixed(0)} s`;
  const p = DEFAULTS;
  process.stdout.write(
    `Two agent loops, two models, one GPU: ${p.rounds} rounds each, ${p.toolMs / 1000} s tool calls, ` +
      `${p.loadMs / 1000} s load, ${p.genMs / 1000} s generation.\n\n` +
      "| mode | swaps | loop 1 | loop 2 | makespan |\n|---|---|---|---|---|\n",
  );
  for (const r of results) {
    process.stdout.write(
      `| ${r.mode} | ${r.swaps} | ${s(r.loopMs[0]!)} | ${s(r.loopMs[1]!)} | ${s(r.makespanMs)} |\n`,
    );
  }
  const evictions = EVICT_MODES.map((m) => simulate(m));
  process.stdout.write(
    `\nSwap cost per eviction mode (holds off): stop ${p.stopMs / 1000} s + load ${p.loadMs / 1000} s, ` +
      `or sleep ${p.sleepMs / 1000} s + wake ${p.wakeMs / 1000} s.\n\n` +
      "| eviction | swaps | loop 1 | loop 2 | makespan |\n|---|---|---|---|---|\n",
  );
  for (const r of evictions) {
    process.stdout.write(
      `| ${r.mode} | ${r.swaps} | ${s(r.loopMs[0]!)} | ${s(r.loopMs[1]!)} | ${s(r.makespanMs)} |\n`,
    );
  }
  process.stdout.write(`\n${JSON.stringify([...results, ...evictions])}\n`);
}
