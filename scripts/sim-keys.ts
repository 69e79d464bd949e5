// Keys sharing one GPU (`bun run sim --keys`; also printed by `bun run sim`): an interactive
// agent loop on one model, a batch key flooding another with 300 requests, and a normal chat
// user on the batch key's model, driven through the real scheduler with a fake clock, with fair
// share on (`[scheduler.fair_share]`, the default) and off. Reported per key: p50 / p95 wait
// (asked → granted), the longest wait, and time to first token (wait + the server's first-token time), when its
// last request ended; then swaps, and GPU idle time (nothing running and nothing loading) in
// all and while someone waited. Deterministic: the tool gaps and the chat user's pauses come
// from a seeded generator.
import { loadConfigText } from "../src/config/index.ts";
import { GroupPolicy } from "../src/policy/group.ts";
import { LoadTimes } from "../src/runtime/load-times.ts";
import { Scheduler } from "../src/scheduler/scheduler.ts";
import type { Effects, RequestKey } from "../src/scheduler/types.ts";
import { percentile, Timeline } from "./sim.ts";

export interface KeysParams {
  loadMs: number;
  stopMs: number;
  /** The agent loop: its rounds, generation, first-token time, tool gaps (uniform, ms). */
  agentRounds: number;
  agentGenMs: number;
  agentFirstTokenMs: number;
  gapMinMs: number;
  gapMaxMs: number;
  agentStartMs: number;
  /** The batch key: its requests, all asked at 0, and each one's generation. */
  batchRequests: number;
  batchGenMs: number;
  batchFirstTokenMs: number;
  /** The batch key's model's `concurrency_limit`. */
  batchSlots: number;
  /** The chat user: requests on the batch key's model, a pause of 20–40 s before each. */
  chatRequests: number;
  chatGenMs: number;
  chatFirstTokenMs: number;
  seed: number;
}

export const KEYS_DEFAULTS: KeysParams = {
  loadMs: 8000,
  stopMs: 500,
  agentRounds: 30,
  agentGenMs: 2000,
  agentFirstTokenMs: 500,
  gapMinMs: 2000,
  gapMaxMs: 8000,
  agentStartMs: 20_000,
  batchRequests: 300,
  batchGenMs: 1500,
  batchFirstTokenMs: 200,
  batchSlots: 4,
  chatRequests: 12,
  chatGenMs: 3000,
  chatFirstTokenMs: 300,
  seed: 1,
};

const AGENT: RequestKey = { name: "agent", priority: "interactive", maxConcurrency: 0 };
const NOTEBOOK: RequestKey = { name: "notebook", priority: "batch", maxConcurrency: 0 };
const CHAT: RequestKey = { name: "chat", priority: "normal", maxConcurrency: 0 };
export const SIM_KEYS = [AGENT, NOTEBOOK, CHAT];

export interface KeyFigures {
  key: string;
  priority: string;
  requests: number;
  p50WaitMs: number;
  p95WaitMs: number;
  maxWaitMs: number;
  p50TtftMs: number;
  p95TtftMs: number;
  /** When its last request ended. */
  doneMs: number;
}

export interface KeysResult {
  fairShare: boolean;
  keys: KeyFigures[];
  swaps: number;
  makespanMs: number;
  /** Nothing running and nothing loading or stopping. */
  gpuIdleMs: number;
  /** The same, while a request waited. */
  idleWhileWaitingMs: number;
}

/** A seeded generator (mulberry32): the same scenario every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function simulateKeys(fairShare: boolean, p: KeysParams = KEYS_DEFAULTS): KeysResult {
  const config = loadConfigText(
    `[scheduler]\n[scheduler.fair_share]\nenabled = ${fairShare}\n` +
      `[models.coder]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nconcurrency_limit = 1\n` +
      `[models.general]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nconcurrency_limit = ${p.batchSlots}\n`,
    { file: "sim-keys.toml", env: {}, isPortFree: () => true },
  );
  const rnd = random(p.seed);
  const t = new Timeline();
  const loadTimes = new LoadTimes(() => t.now);
  interface Ask {
    key: RequestKey;
    at: number;
    genMs: number;
    firstTokenMs: number;
    toolCalls: boolean;
    next: () => void;
    grantedAt?: number;
    doneAt?: number;
  }
  const asks = new Map<number, Ask>();
  let nextId = 1;
  let swaps = 0;
  let inflight = 0;
  let transitions = 0;
  let waiting = 0;
  let gpuIdleMs = 0;
  let idleWhileWaitingMs = 0;
  let last = 0;
  /** Time since the last change counts as idle if nothing ran or moved. */
  const mark = () => {
    const span = t.now - last;
    if (inflight === 0 && transitions === 0) {
      gpuIdleMs += span;
      if (waiting > 0) idleWhileWaitingMs += span;
    }
    last = t.now;
  };
  const effects: Effects = {
    grant(id) {
      mark();
      const a = asks.get(id)!;
      a.grantedAt = t.now;
      inflight++;
      waiting--;
      t.at(a.genMs, () => {
        mark();
        inflight--;
        a.doneAt = t.now;
        sched.serveDone(id, { toolCalls: a.toolCalls });
        a.next();
      });
      return true;
    },
    fail(id, error) {
      throw new Error(`request ${id} failed: ${error.message}`);
    },
    startSwap(swap) {
      mark();
      swaps++;
      transitions++;
      const stop = swap.evict.length > 0 ? p.stopMs : 0;
      t.at(stop + p.loadMs, () => {
        mark();
        transitions--;
        sched.swapDone(swap.id, { ok: true });
      });
    },
    abortSwap(swapId) {
      throw new Error(`swap ${swapId} aborted: nothing in the simulation unloads or leaves`);
    },
    stopModels(models) {
      mark();
      transitions++;
      t.at(p.stopMs, () => {
        mark();
        transitions--;
        for (const m of models) sched.stopped(m);
      });
    },
    sleepModels() {
      throw new Error("no model sleeps in the simulation");
    },
    position() {},
    loading() {},
    wakeAt(at) {
      t.arm(at, () => sched.wake());
    },
    holdChanged() {},
    stateChanged(model, state) {
      loadTimes.state(model, state);
    },
  };
  const sched = new Scheduler(
    config,
    new GroupPolicy(config),
    effects,
    { now: () => t.now },
    { loadMs: (id) => loadTimes.expected(id), wakeMs: () => null },
  );
  const ask = (model: string, a: Omit<Ask, "at">) => {
    mark();
    const id = nextId++;
    asks.set(id, { ...a, at: t.now });
    waiting++;
    sched.request({ id, model, key: a.key, conversation: a.key.name });
  };

  // The agent: a round, a tool gap, the next round; the last round answers in text.
  let round = 0;
  const agentRound = () => {
    round++;
    const lastRound = round >= p.agentRounds;
    ask("coder", {
      key: AGENT,
      genMs: p.agentGenMs,
      firstTokenMs: p.agentFirstTokenMs,
      toolCalls: !lastRound,
      next: () => {
        if (!lastRound) t.at(p.gapMinMs + rnd() * (p.gapMaxMs - p.gapMinMs), agentRound);
      },
    });
  };
  t.at(p.agentStartMs, agentRound);
  // The notebook: everything at once.
  for (let i = 0; i < p.batchRequests; i++) {
    ask("general", {
      key: NOTEBOOK,
      genMs: p.batchGenMs,
      firstTokenMs: p.batchFirstTokenMs,
      toolCalls: false,
      next: () => {},
    });
  }
  // The chat user: a question, the answer read, a pause, the next.
  let asked = 0;
  const chat = () => {
    asked++;
    ask("general", {
      key: CHAT,
      genMs: p.chatGenMs,
      firstTokenMs: p.chatFirstTokenMs,
      toolCalls: false,
      next: () => {
        if (asked < p.chatRequests) t.at(20_000 + rnd() * 20_000, chat);
      },
    });
  };
  t.at(10_000, chat);
  t.run(24 * 3600 * 1000);
  mark();

  const keys = SIM_KEYS.map((key) => {
    const mine = [...asks.values()].filter((a) => a.key === key);
    if (mine.some((a) => a.doneAt === undefined)) {
      throw new Error(`${key.name}: a request never finished (fair share ${fairShare})`);
    }
    const waits = mine.map((a) => a.grantedAt! - a.at);
    const ttfts = mine.map((a) => a.grantedAt! - a.at + a.firstTokenMs);
    return {
      key: key.name,
      priority: key.priority,
      requests: mine.length,
      p50WaitMs: percentile(waits, 0.5),
      p95WaitMs: percentile(waits, 0.95),
      maxWaitMs: Math.max(...waits),
      p50TtftMs: percentile(ttfts, 0.5),
      p95TtftMs: percentile(ttfts, 0.95),
      doneMs: Math.max(...mine.map((a) => a.doneAt!)),
    };
  });
  return {
    fairShare,
    keys,
    swaps,
    makespanMs: Math.max(...keys.map((k) => k.doneMs)),
    gpuIdleMs,
    idleWhileWaitingMs,
  };
}

const sec = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

export function printKeys(prefix = ""): KeysResult[] {
  const p = KEYS_DEFAULTS;
  const results = [true, false].map((on) => simulateKeys(on, p));
  let out =
    `${prefix}Keys sharing one GPU: an interactive agent loop on coder (${p.agentRounds} rounds, ` +
    `${sec(p.agentGenMs)} each, tool gaps ${sec(p.gapMinMs)}–${sec(p.gapMaxMs)}), a batch key's ` +
    `${p.batchRequests} requests on general (${sec(p.batchGenMs)} each, ${p.batchSlots} slots), ` +
    `a normal chat user on general (${p.chatRequests} questions, ${sec(p.chatGenMs)} each); ` +
    `coder and general take turns on the GPU, ${sec(p.loadMs)} to load.\n\n` +
    "| fair share | key | priority | p50 wait | p95 wait | max wait | p50 TTFT | p95 TTFT | last done |\n" +
    "|---|---|---|---|---|---|---|---|---|\n";
  for (const r of results) {
    for (const k of r.keys) {
      out += `| ${r.fairShare ? "on" : "off"} | ${k.key} | ${k.priority} | ${sec(k.p50WaitMs)} | ${sec(k.p95WaitMs)} | ${sec(k.maxWaitMs)} | ${sec(k.p50TtftMs)} | ${sec(k.p95TtftMs)} | ${sec(k.doneMs)} |\n`;
    }
  }
  out +=
    "\n| fair share | swaps | makespan | GPU idle | idle while someone waited |\n|---|---|---|---|---|\n";
  for (const r of results) {
    out += `| ${r.fairShare ? "on" : "off"} | ${r.swaps} | ${sec(r.makespanMs)} | ${sec(r.gpuIdleMs)} | ${sec(r.idleWhileWaitingMs)} |\n`;
  }
  process.stdout.write(out);
  return results;
}

if (import.meta.main) printKeys();
