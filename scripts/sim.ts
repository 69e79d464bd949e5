// `bun run sim`: a deterministic simulation of agent loops on models that share one GPU (one
// swap group), driven through the real scheduler with a fake clock. Each loop asks its model,
// generates, makes a tool call, and asks again; every round but the last ends in tool calls.
// Printed for hold_on = "request", hold_on = "tool_calls" (both `hold_policy = "fixed"`), holds
// off and `hold_policy = "cost"`: swap count, each loop's total time and the makespan; then,
// holds off, the cost of a swap per eviction mode: the models stopped and loaded cold
// (`evict = "stop"`), put to sleep and woken (`evict = "sleep"`), or stopped with their KV cache
// saved and restored (`keep_kv = true`); there each turn after a reload also pays for its prompt:
// whole when the cache is gone, only the new part when restored. Then the hold policies' grid
// (sim-grid.ts; `--grid` prints only that); then keys sharing the GPU with fair share on and off
// (sim-keys.ts; `--keys` prints only that). Every time can be set on the command line
// (`--load-ms 30000`, `--prefill-ms`, …), and the prefill pair read from the JSON line
// `scripts/llama/keep-kv.ts` printed (`--from FILE`).
import { readFileSync } from "node:fs";
import { loadConfigText } from "../src/config/index.ts";
import { GroupPolicy } from "../src/policy/group.ts";
import { LoadTimes } from "../src/runtime/load-times.ts";
import { Scheduler } from "../src/scheduler/scheduler.ts";
import type { Effects, Swap } from "../src/scheduler/types.ts";
import { printGrid } from "./sim-grid.ts";
import { printKeys } from "./sim-keys.ts";
import { printOneShot } from "./sim-one-shot.ts";

export interface SimParams {
  rounds: number;
  /** Agent loops, each on its own model (all in one swap group). */
  agents: number;
  toolMs: number;
  loadMs: number;
  genMs: number;
  stopMs: number;
  /** `evict = "sleep"`: how long putting a model to sleep and waking it take. */
  sleepMs: number;
  wakeMs: number;
  /** A turn whose model was reloaded since its last turn processes the whole prompt again. */
  prefillMs: number;
  /** The same turn with its slot restored (`keep_kv`): only what is new since the cache. */
  restoredPrefillMs: number;
  /** `keep_kv`: saving the slots before a stop, restoring them after a load. */
  saveMs: number;
  restoreMs: number;
}

export const DEFAULTS: SimParams = {
  rounds: 20,
  agents: 2,
  toolMs: 2000,
  loadMs: 8000,
  genMs: 3000,
  stopMs: 500,
  sleepMs: 500,
  wakeMs: 1500,
  // Without prompt processing: the first table is about holds alone.
  prefillMs: 0,
  restoredPrefillMs: 0,
  saveMs: 0,
  restoreMs: 0,
};

/**
 * The eviction comparison's prompt figures: measured with the real llama-server on a tiny GGUF
 * (`scripts/llama/keep-kv.ts`: a 7 286-token agent prompt, `timings.prompt_ms` cold 3 313 ms,
 * restored 155 ms); save and restore times are assumed.
 */
export const EVICTION_DEFAULTS: SimParams = {
  ...DEFAULTS,
  prefillMs: 3313,
  restoredPrefillMs: 155,
  saveMs: 200,
  restoreMs: 200,
};

/** `scheduler`: the `[scheduler]` lines; `evict`: the models' eviction mode (default "stop"). */
export type Mode = {
  name: string;
  scheduler: string;
  evict?: "stop" | "sleep";
  keepKv?: boolean;
  /**
   * When a loop ends, unload its model (the grid's "hold until the loop ends" baseline: a
   * `"fixed"` hold outlives the loop by what is left of its window).
   */
  releaseAtLoopEnd?: boolean;
};
export const MODES: Mode[] = [
  {
    name: 'hold_on = "request"',
    scheduler: 'hold_policy = "fixed"\nhold_ms = 10000\nhold_on = "request"',
  },
  {
    name: 'hold_on = "tool_calls"',
    scheduler: 'hold_policy = "fixed"\nhold_ms = 10000\nhold_on = "tool_calls"',
  },
  { name: "holds off", scheduler: "hold_ms = 0" },
  { name: 'hold_policy = "cost"', scheduler: 'hold_policy = "cost"' },
];

/** Swap cost per eviction mode, holds off (every round swaps). */
export const EVICT_MODES: Mode[] = [
  { name: 'evict = "stop"', scheduler: "hold_ms = 0", evict: "stop" },
  { name: 'evict = "sleep"', scheduler: "hold_ms = 0", evict: "sleep" },
  { name: 'evict = "stop", keep_kv = true', scheduler: "hold_ms = 0", evict: "stop", keepKv: true },
];

export interface SimResult {
  mode: string;
  swaps: number;
  loopMs: number[];
  makespanMs: number;
  /** Each request's time to first token (grant, plus its prompt processing), in ask order. */
  ttftMs: number[];
  /** The same, per client (in its rounds' order). */
  ttftByClient: number[][];
  /** Holds granted, per model. */
  holdsByModel: Record<string, number>;
}

/**
 * Who sends requests: each client asks its model, gets its answer after the generation, waits
 * `gapMs`, and asks again, `rounds` times. An agent loop's answers end in tool calls but the
 * last, and its requests after the first carry the tool results; a chat client's do neither.
 */
export interface Client {
  model: string;
  rounds: number;
  gapMs: number;
  /** When its first request is sent. */
  startMs: number;
  /** The conversation key of round `r` (from 0). */
  conversation: (r: number) => string;
  /** Round `r`'s answer ends in tool calls. */
  toolCalls: (r: number) => boolean;
  /** Round `r`'s request carries a tool result; undefined: it does not say (the rule before). */
  toolResult: (r: number) => boolean | undefined;
}

/** The agent loops `p` describes, one per model: round 0 a task, every later one a tool result. */
export function agentLoops(p: SimParams): Client[] {
  return Array.from({ length: p.agents }, (_, i) => ({
    model: `m${i + 1}`,
    rounds: p.rounds,
    gapMs: p.toolMs,
    startMs: 0,
    conversation: () => `agent-${i + 1}`,
    toolCalls: (r) => r < p.rounds - 1,
    toolResult: (r) => r > 0,
  }));
}

/** A tiny discrete-event loop: callbacks run in time order (ties in insertion order). */
export class Timeline {
  now = 0;
  private seq = 0;
  private readonly events: { at: number; seq: number; fn: () => void }[] = [];
  at(delay: number, fn: () => void): void {
    const e = { at: this.now + delay, seq: this.seq++, fn };
    let i = this.events.length;
    while (i > 0 && this.events[i - 1]!.at > e.at) i--;
    this.events.splice(i, 0, e);
  }
  /** Runs the events up to `limitMs` in order, `after` each one. */
  run(limitMs: number, after?: () => void): void {
    for (let e = this.events.shift(); e && e.at <= limitMs; e = this.events.shift()) {
      this.now = e.at;
      e.fn();
      after?.();
    }
  }

  private armed: number | null = null;
  /**
   * The scheduler's one wake timer (`Effects.wakeAt`) on this timeline: `wake` runs at `at`,
   * unless it was re-armed (or disarmed, null) since.
   */
  arm(at: number | null, wake: () => void): void {
    this.armed = at;
    if (at === null) return;
    this.at(Math.max(0, at - this.now), () => {
      if (this.armed !== null && this.now >= this.armed) wake();
    });
  }
}

interface Loop {
  client: Client;
  index: number;
  round: number;
  doneAt: number;
}

export function simulate(
  mode: Mode,
  p: SimParams = DEFAULTS,
  clients: Client[] = agentLoops(p),
): SimResult {
  const evict = `evict = "${mode.evict ?? "stop"}"\n`;
  const patience = mode.scheduler.includes("patience_ms") ? "" : "patience_ms = 300000\n";
  const ids = [...new Set(clients.map((c) => c.model))];
  const config = loadConfigText(
    `[scheduler]\n${mode.scheduler}\n${patience}\n` +
      ids.map((id) => `[models.${id}]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\n${evict}`).join(""),
    { file: "sim.toml", env: {}, isPortFree: () => true },
  );
  const t = new Timeline();
  let swaps = 0;
  const loops: Loop[] = clients.map((client, index) => ({ client, index, round: 0, doneAt: -1 }));
  const ttftByClient: number[][] = clients.map(() => []);
  const byRequest = new Map<number, Loop>();
  const askedAt = new Map<number, number>();
  const ttftMs: number[] = [];
  /** Models (re)loaded or woken since their loop's last turn: the KV cache is gone. */
  const reloaded = new Set<string>();
  const loadedOnce = new Set<string>();
  // What the runtime measures: each load and wake, from its swap's start until ready.
  const loadTimes = new LoadTimes(() => t.now);
  const holdsByModel: Record<string, number> = {};
  let nextId = 1;

  const effects: Effects = {
    grant(id) {
      const loop = byRequest.get(id)!;
      const { client } = loop;
      // vLLM's sleep drops the KV cache too; only keep_kv brings it back.
      let prefill = 0;
      if (reloaded.delete(client.model)) prefill = mode.keepKv ? p.restoredPrefillMs : p.prefillMs;
      ttftMs[id - 1] = t.now - askedAt.get(id)! + prefill;
      ttftByClient[loop.index]!.push(ttftMs[id - 1]!);
      t.at(prefill + p.genMs, () => {
        const toolCalls = client.toolCalls(loop.round);
        loop.round++;
        const last = loop.round >= client.rounds;
        sched.serveDone(id, { toolCalls });
        if (last) {
          loop.doneAt = t.now;
          if (mode.releaseAtLoopEnd) sched.unload(client.model);
        } else t.at(client.gapMs, () => ask(loop));
      });
      return true;
    },
    fail(id, error) {
      throw new Error(`request ${id} failed: ${error.message}`);
    },
    startSwap(swap: Swap) {
      swaps++;
      const asleep = swap.sleep ?? [];
      const save = mode.keepKv ? p.saveMs : 0;
      const stop = swap.evict.length === 0 ? 0 : asleep.length > 0 ? p.sleepMs : p.stopMs + save;
      const load = swap.wake ? p.wakeMs : p.loadMs + (mode.keepKv ? p.restoreMs : 0);
      t.at(stop + load, () => {
        // A first load has no cache to lose; every later one does.
        if (loadedOnce.has(swap.target)) reloaded.add(swap.target);
        loadedOnce.add(swap.target);
        sched.swapDone(swap.id, { ok: true, asleep });
      });
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
      t.arm(at, () => sched.wake());
    },
    holdChanged(model, change) {
      if (change === "granted") holdsByModel[model] = (holdsByModel[model] ?? 0) + 1;
    },
    stateChanged(model, state, detail) {
      // As the runtime does: a wake is measured apart from loads.
      const waking = state === "starting" && detail === "waking";
      if (!waking) loadTimes.state(model, state);
      loadTimes.wakeState(model, state, waking);
    },
  };
  const sched = new Scheduler(
    config,
    new GroupPolicy(config),
    effects,
    { now: () => t.now },
    {
      loadMs: (id) => loadTimes.expected(id),
      wakeMs: (id) => loadTimes.expectedWake(id),
    },
  );
  const ask = (loop: Loop) => {
    const id = nextId++;
    byRequest.set(id, loop);
    askedAt.set(id, t.now);
    const { client, round } = loop;
    sched.request({
      id,
      model: client.model,
      conversation: client.conversation(round),
      toolResult: client.toolResult(round),
    });
  };
  for (const loop of loops) {
    if (loop.client.startMs > 0) t.at(loop.client.startMs, () => ask(loop));
    else ask(loop);
  }
  t.run(24 * 3600 * 1000);
  const loopMs = loops.map((l) => l.doneAt);
  if (loopMs.some((ms) => ms < 0)) throw new Error(`${mode.name}: a loop never finished`);
  const makespanMs = Math.max(...loopMs);
  return { mode: mode.name, swaps, loopMs, makespanMs, ttftMs, ttftByClient, holdsByModel };
}

/** The nearest-rank percentile `q` (0–1) of `xs`. */
export function percentile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil(q * s.length) - 1)]!;
}

/** `--name-ms N` flags over `base`; `--from FILE`: the prefill pair from keep-kv.ts's JSON line. */
export function paramsFrom(argv: readonly string[], base: SimParams): SimParams {
  const out = { ...base };
  const keys: Record<string, keyof SimParams> = {
    "--rounds": "rounds",
    "--agents": "agents",
    "--tool-ms": "toolMs",
    "--load-ms": "loadMs",
    "--gen-ms": "genMs",
    "--stop-ms": "stopMs",
    "--sleep-ms": "sleepMs",
    "--wake-ms": "wakeMs",
    "--prefill-ms": "prefillMs",
    "--restored-prefill-ms": "restoredPrefillMs",
    "--save-ms": "saveMs",
    "--restore-ms": "restoreMs",
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag === "--grid" || flag === "--keys") continue;
    if (flag === "--from") {
      const text = readFileSync(argv[++i]!, "utf8");
      const line = text.trim().split("\n").at(-1)!;
      const m = JSON.parse(line) as {
        keep_kv_off?: { prompt_ms?: number };
        keep_kv_on?: { prompt_ms?: number };
      };
      if (m.keep_kv_off?.prompt_ms) out.prefillMs = m.keep_kv_off.prompt_ms;
      if (m.keep_kv_on?.prompt_ms) out.restoredPrefillMs = m.keep_kv_on.prompt_ms;
      continue;
    }
    const key = keys[flag];
    const value = Number(argv[i + 1]);
    if (!key || !Number.isFinite(value) || value < 0) {
      throw new Error(`sim: unknown flag or bad value: ${flag} ${argv[i + 1] ?? ""}`);
    }
    out[key] = value;
    i++;
  }
  return out;
}

function printLoops(args: readonly string[]): void {
  const p = paramsFrom(args, DEFAULTS);
  const e = paramsFrom(args, EVICTION_DEFAULTS);
  const results = MODES.map((m) => simulate(m, p));
  const s = (ms: number) => `${(ms / 1000).toFixed(0)} s`;
  const row = (r: SimResult) =>
    `| ${r.mode} | ${r.swaps} | ${r.loopMs.map(s).join(" | ")} | ${s(r.makespanMs)} |\n`;
  process.stdout.write(
    `${p.agents} agent loops, ${p.agents} models, one GPU: ${p.rounds} rounds each, ${p.toolMs / 1000} s tool calls, ` +
      `${p.loadMs / 1000} s load, ${p.genMs / 1000} s generation.\n\n` +
      `| mode | swaps | ${results[0]!.loopMs.map((_, i) => `loop ${i + 1}`).join(" | ")} | makespan |\n` +
      `|---|---|${results[0]!.loopMs.map(() => "---|").join("")}---|\n`,
  );
  for (const r of results) process.stdout.write(row(r));
  const evictions = EVICT_MODES.map((m) => simulate(m, e));
  process.stdout.write(
    `\nSwap cost per eviction mode (holds off): stop ${e.stopMs / 1000} s + load ${e.loadMs / 1000} s, ` +
      `or sleep ${e.sleepMs / 1000} s + wake ${e.wakeMs / 1000} s; keep_kv adds a ${e.saveMs / 1000} s save ` +
      `and a ${e.restoreMs / 1000} s restore. A turn after a reload or a wake processes its prompt again: ` +
      `${e.prefillMs / 1000} s cold, ${e.restoredPrefillMs / 1000} s restored.\n\n` +
      `| eviction | swaps | ${evictions[0]!.loopMs.map((_, i) => `loop ${i + 1}`).join(" | ")} | makespan |\n` +
      `|---|---|${evictions[0]!.loopMs.map(() => "---|").join("")}---|\n`,
  );
  for (const r of evictions) process.stdout.write(row(r));
  const brief = (r: SimResult) => ({ ...r, ttftMs: undefined, ttftByClient: undefined });
  process.stdout.write(`\n${JSON.stringify([...results, ...evictions].map(brief))}\n`);
  printOneShot(p);
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  if (args.includes("--keys")) {
    printKeys();
  } else {
    if (!args.includes("--grid")) printLoops(args);
    printGrid(args.includes("--grid") ? "" : "\n");
    if (!args.includes("--grid")) printKeys("\n");
  }
}
