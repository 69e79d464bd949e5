// One-shot clients in the simulator (`bun run sim`, after the agent loops): clients that offer
// tools on every call and get tool calls back but never run them (Open WebUI's built-in tools,
// langchain's `bind_tools`), beside other traffic on another model in the same swap group; and
// the reference agent loops. Each scenario runs under `hold_policy = "cost"` twice: with
// requests that do not say whether they carry a tool result (the rule before: every tool-call
// answer may be held) and with requests that say so (the evidence rule, src/scheduler/design.md
// "Evidence of a loop"); and with holds off.
import {
  agentLoops,
  type Client,
  DEFAULTS,
  type Mode,
  type SimParams,
  type SimResult,
  simulate,
} from "./sim.ts";

const COST: Mode = { name: "cost", scheduler: 'hold_policy = "cost"' };
const OFF: Mode = { name: "holds off", scheduler: "hold_ms = 0" };

/**
 * A chat UI that offers tools on every message, in one conversation; a person types the next
 * 20 s after each answer.
 */
function toolsUi(model: string): Client {
  return {
    model,
    rounds: 10,
    gapMs: 20_000,
    startMs: 0,
    conversation: () => "ui-chat",
    toolCalls: () => true,
    toolResult: () => false,
  };
}

/** A script that binds tools to every call: each call its own conversation, 5 s apart. */
function boundTools(model: string): Client {
  return {
    model,
    rounds: 20,
    gapMs: 5000,
    startMs: 0,
    conversation: (r) => `call-${r}`,
    toolCalls: () => true,
    toolResult: () => false,
  };
}

/** A plain chat on `model`, a message every 20 s from `startMs`. */
function chat(model: string, startMs: number): Client {
  return {
    model,
    rounds: 10,
    gapMs: 20_000,
    startMs,
    conversation: () => "chat",
    toolCalls: () => false,
    toolResult: () => false,
  };
}

/** An agent loop on `model`: a task, then tool results, 2 s tool gaps. */
function agent(model: string, rounds: number): Client {
  return {
    model,
    rounds,
    gapMs: 2000,
    startMs: 1000,
    conversation: () => "agent",
    toolCalls: (r) => r < rounds - 1,
    toolResult: (r) => r > 0,
  };
}

export interface OneShotRow {
  scenario: string;
  rule: string;
  swaps: number;
  /** The other client's (chat, agent) time to first token: mean and max, in ms. */
  otherMeanMs: number;
  otherMaxMs: number;
  makespanMs: number;
  /** Holds granted on the first client's model (the one whose tool calls are never run). */
  firstHolds: number;
}

/** What a client's requests say of tool results: nothing (the rule before), or the truth. */
const silent = (c: Client): Client => ({ ...c, toolResult: () => undefined });

const SCENARIOS: [string, (p: SimParams) => Client[]][] = [
  ["tools on every chat, one conversation + a chat", () => [toolsUi("m1"), chat("m2", 10_000)]],
  ["bind_tools calls (langchain) + a chat", () => [boundTools("m1"), chat("m2", 2500)]],
  ["bind_tools calls + an agent loop", () => [boundTools("m1"), agent("m2", 20)]],
  ["the reference agent loops", (p) => agentLoops(p)],
];

export function oneShotRows(p: SimParams = DEFAULTS): OneShotRow[] {
  const rows: OneShotRow[] = [];
  const row = (scenario: string, rule: string, r: SimResult): OneShotRow => {
    const other = r.ttftByClient[1]!;
    return {
      scenario,
      rule,
      swaps: r.swaps,
      otherMeanMs: other.reduce((a, b) => a + b, 0) / other.length,
      otherMaxMs: Math.max(...other),
      makespanMs: r.makespanMs,
      firstHolds: r.holdsByModel.m1 ?? 0,
    };
  };
  for (const [scenario, clients] of SCENARIOS) {
    const told = clients(p);
    rows.push(row(scenario, "cost, before", simulate(COST, p, told.map(silent))));
    rows.push(row(scenario, "cost, evidence of a loop", simulate(COST, p, told)));
    rows.push(row(scenario, "holds off", simulate(OFF, p, told)));
  }
  return rows;
}

export function printOneShot(p: SimParams = DEFAULTS): void {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  process.stdout.write(
    `\nOne-shot clients: tool calls that are never run, beside other traffic on a second model ` +
      `(one at a time; ${p.loadMs / 1000} s load, ${p.genMs / 1000} s generation); and the ` +
      `reference agent loops. "before": requests that do not say whether they carry a tool ` +
      `result (every tool-call answer may be held). "other": the second client's time to first ` +
      `token.\n\n` +
      "| scenario | rule | swaps | other: mean | other: max | makespan |\n|---|---|---|---|---|---|\n",
  );
  for (const r of oneShotRows(p)) {
    process.stdout.write(
      `| ${r.scenario} | ${r.rule} | ${r.swaps} | ${s(r.otherMeanMs)} | ${s(r.otherMaxMs)} | ${s(r.makespanMs)} |\n`,
    );
  }
}
