// `bun scripts/agent-loops.ts`: agent loops through the compiled binary (dist/qm), measured per
// hold policy. Two agents, each on its own model, both models in one swap group (one at a time
// on the GPU); six rounds each: a streamed chat request that offers a tool and ends in a tool
// call, a tool gap, then the next round carrying the tool's result; the last round offers no
// tools (qm sees a plain answer: the loop is over). The models are `qm demo-upstream`
// (`--load-delay-ms` is the load, `--tool-calls` with `--tool-rounds` past the last round, so
// every round that offers a tool ends in a call; 32 tokens at 20 ms). Run for two regimes —
// loads cheaper than the gap (1 s) and dearer (5 s) — under qm's default (`hold_policy = "cost"`),
// `hold_ms = 0` (holds off) and `hold_policy = "fixed"`. Printed: makespan, p95 time to first
// token (first `data:` frame of each round) and model starts (`qm_swaps_total`), and the default's
// ratios to holds off. A measurement, not a test: `--gap-ms`, `--rounds`, `--loads 1000,5000`.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { withCleanup } from "./bench/procs.ts";
import { ensureBuilt, modelStatus, QM_BIN, type Qm, startQmWith } from "./bench/qm.ts";
import { freePort, percentile } from "./bench/util.ts";

interface Options {
  rounds: number;
  gapMs: number;
  loadsMs: number[];
}

const POLICIES = [
  { name: "qm default (cost)", scheduler: "" },
  { name: "hold_ms = 0", scheduler: "hold_ms = 0" },
  { name: 'hold_policy = "fixed"', scheduler: 'hold_policy = "fixed"' },
] as const;

interface Result {
  policy: string;
  loadMs: number;
  makespanMs: number;
  p95TtftMs: number;
  starts: number;
}

const TOOLS = [
  {
    type: "function",
    function: {
      name: "read_file",
      description: "Reads a file",
      parameters: { type: "object", properties: { path: { type: "string" } } },
    },
  },
];

/**
 * `stateDir`: this run's own, so the load times it learns are its own (qm keeps them across
 * restarts, per model id, and every run names its models alike).
 */
function configToml(
  listenPort: number,
  loadMs: number,
  scheduler: string,
  stateDir: string,
): string {
  const startPort = 20000 + Math.floor(Math.random() * 10000);
  const model = (id: string) =>
    `[models.${id}]\ncmd = "${QM_BIN} demo-upstream --port \${PORT} --name ${id} ` +
    `--load-delay-ms ${loadMs} --tool-calls --tool-rounds 1000"\n`;
  return (
    `[server]\nlisten = ["127.0.0.1:${listenPort}"]\nstart_port = ${startPort}\n` +
    `state_dir = ${JSON.stringify(stateDir)}\n` +
    `metrics_on_api = true\n\n[resources]\ngpu_probe = "off"\n\n` +
    `[scheduler]\n${scheduler}\n\n${model("agent-a")}\n${model("agent-b")}`
  );
}

/** One streamed round: resolves with the time to the first `data:` frame, once the stream ends. */
async function round(qm: Qm, model: string, messages: unknown[], tools: boolean): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${qm.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, stream: true, messages, ...(tools ? { tools: TOOLS } : {}) }),
  });
  if (!res.ok || !res.body) throw new Error(`${model}: HTTP ${res.status} ${await res.text()}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let ttft: number | null = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    // Wait-status comments (`: qm-status …`) are not the model's output.
    if (ttft === null && /^data: /m.test(text)) ttft = performance.now() - t0;
  }
  if (ttft === null || !text.includes("data: [DONE]")) throw new Error(`${model}: cut stream`);
  return ttft;
}

/** An agent's loop: `rounds` rounds, a tool gap after each but the last. */
async function agent(qm: Qm, model: string, o: Options, ttfts: number[]): Promise<void> {
  const messages: unknown[] = [
    { role: "system", content: `You are agent ${model}; use the tools.` },
    { role: "user", content: `Fix the failing test in ${model}'s repository.` },
  ];
  for (let r = 1; r <= o.rounds; r++) {
    const last = r === o.rounds;
    ttfts.push(await round(qm, model, messages, !last));
    if (last) break;
    const id = `call_${model}_${r}`;
    messages.push(
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id, type: "function", function: { name: "read_file", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: id, content: `contents of file ${r}` },
    );
    await Bun.sleep(o.gapMs);
  }
}

async function starts(qm: Qm): Promise<number> {
  const text = await (await fetch(`${qm.url}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^qm_swaps_total\{[^}]*result="ok"[^}]*\} (\d+)/gm)) {
    n += Number(m[1]);
  }
  return n;
}

async function measure(dir: string, o: Options, loadMs: number, p: (typeof POLICIES)[number]) {
  const port = freePort();
  const name = `${p.name.replace(/\W+/g, "-")}-${loadMs}`;
  const toml = configToml(port, loadMs, p.scheduler, join(dir, `${name}-state`));
  const qm = await startQmWith(dir, name, port, toml);
  const ttfts: number[] = [];
  const t0 = performance.now();
  await Promise.all([agent(qm, "agent-a", o, ttfts), agent(qm, "agent-b", o, ttfts)]);
  const makespanMs = performance.now() - t0;
  const result: Result = {
    policy: p.name,
    loadMs,
    makespanMs,
    p95TtftMs: percentile(ttfts, 95),
    starts: await starts(qm),
  };
  await stop(qm);
  return result;
}

/** Stops qm (it stops its models first) and waits until it is gone. */
async function stop(qm: Qm): Promise<void> {
  // Its models' process groups, for the clean-up should qm not stop them.
  for (const id of ["agent-a", "agent-b"]) await modelStatus(qm, id).catch(() => null);
  process.kill(qm.pid, "SIGTERM");
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      process.kill(qm.pid, 0);
    } catch {
      return;
    }
    await Bun.sleep(50);
  }
  throw new Error(`qm (pid ${qm.pid}) did not stop after SIGTERM`);
}

function optionsFrom(argv: readonly string[]): Options {
  const o: Options = { rounds: 6, gapMs: 2000, loadsMs: [1000, 5000] };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1] ?? ""];
    if (flag === "--rounds") o.rounds = Number(value);
    else if (flag === "--gap-ms") o.gapMs = Number(value);
    else if (flag === "--loads") o.loadsMs = value.split(",").map(Number);
    else throw new Error(`agent-loops: unknown flag ${flag}`);
  }
  if (!(o.rounds >= 1) || !(o.gapMs >= 0) || o.loadsMs.some((n) => !(n >= 0))) {
    throw new Error("agent-loops: --rounds ≥ 1, --gap-ms and --loads ≥ 0");
  }
  return o;
}

const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function main(): Promise<void> {
  const o = optionsFrom(process.argv.slice(2));
  await ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), "qm-agent-loops-"));
  const results: Result[] = [];
  await withCleanup(
    async () => {
      for (const loadMs of o.loadsMs) {
        for (const p of POLICIES) {
          const r = await measure(dir, o, loadMs, p);
          results.push(r);
          process.stderr.write(
            `${sec(loadMs)} load, ${r.policy}: ${sec(r.makespanMs)} / ${sec(r.p95TtftMs)} / ${r.starts} starts\n`,
          );
        }
      }
      report(o, results);
    },
    () => rmSync(dir, { recursive: true, force: true }),
  );
}

function report(o: Options, results: readonly Result[]): void {
  process.stdout.write(
    `Two agent loops, two models in one swap group, ${o.rounds} rounds each, ${sec(o.gapMs)} tool gaps, ` +
      "through dist/qm and qm demo-upstream (32 tokens at 20 ms).\n\n" +
      "| load | policy | makespan | p95 TTFT | model starts | makespan ÷ holds off | p95 TTFT ÷ holds off |\n" +
      "|---|---|---|---|---|---|---|\n",
  );
  for (const r of results) {
    const off = results.find((x) => x.loadMs === r.loadMs && x.policy === "hold_ms = 0")!;
    process.stdout.write(
      `| ${sec(r.loadMs)} | ${r.policy} | ${sec(r.makespanMs)} | ${sec(r.p95TtftMs)} | ${r.starts} | ` +
        `${(r.makespanMs / off.makespanMs).toFixed(2)} | ${(r.p95TtftMs / off.p95TtftMs).toFixed(2)} |\n`,
    );
  }
  process.stdout.write(`\n${JSON.stringify(results)}\n`);
}

if (import.meta.main) await main();
