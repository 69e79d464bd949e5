/**
 * Section (f): qm's own JavaScript per request, without sockets. The handler a listener calls
 * (edge → route → exchange → scheduler → proxy) runs in-process on a real Runtime whose model
 * is a ready stand-in, with `fetch` answering at once from memory. What is left is exactly
 * qm's work per request, free of the loopback and scheduling noise that the end-to-end figures
 * carry on a shared 2-core box. `floor` is the cost of building a Request and reading a
 * Response alone, which any handler pays.
 *
 * Run by bench.ts in a child process (it replaces the global `fetch`):
 *   bun scripts/bench/overhead.ts  → one JSON line on stdout
 *   bun scripts/bench/overhead.ts --toml TEXT --c1  → the same, with TEXT added to the config,
 *     measuring one client only (the observability section's in-process figure)
 */
import { buildApp } from "../../src/api/app.ts";
import { loadConfigText } from "../../src/config/index.ts";
import type { ModelConfig } from "../../src/config/types.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import type { ModelServer } from "../../src/runtime/swap-runner.ts";
import { systemClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";

const REQUESTS = 32_000;
const RUNS = 5;

/** The child's report. */
export interface Overhead {
  qm_us_per_req_c1: number;
  /**
   * The same at 1 client as CPU time (user + system, `process.cpuUsage`): other work on the
   * box stretches wall time far more than it does this.
   */
  qm_cpu_us_per_req_c1: number;
  qm_us_per_req_c32: number;
  floor_us_per_req: number;
  method: string;
}

/** Runs this file in a child process and returns its report. */
export function inProcessOverhead(opts: { toml?: string; c1Only?: boolean } = {}): Overhead {
  const argv = [process.execPath, import.meta.path];
  if (opts.toml) argv.push("--toml", opts.toml);
  if (opts.c1Only) argv.push("--c1");
  const run = Bun.spawnSync(argv, { stderr: "inherit" });
  if (run.exitCode !== 0) throw new Error(`overhead run failed (exit ${run.exitCode})`);
  return JSON.parse(run.stdout.toString()) as Overhead;
}

function standIn(model: ModelConfig): ModelServer {
  let state: ModelServer["state"] = "stopped";
  return {
    get state() {
      return state;
    },
    pid: 1,
    model,
    start: () => {
      state = "ready";
      return Promise.resolve();
    },
    stop: () => {
      state = "stopped";
      return Promise.resolve();
    },
    logs: () => [],
    stderrTail: () => [],
  } as unknown as ModelServer;
}

async function measure(extraToml = "", c1Only = false): Promise<Overhead> {
  const toml = `${extraToml}\n[models.m]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\n`;
  const cfg = loadConfigText(toml, {
    file: "bench.toml",
    env: {},
    isPortFree: () => true,
  });
  const rt = new Runtime(cfg, { clock: systemClock, log: silentLogger, makeProcess: standIn });
  const app = buildApp(rt, { loopback: true, log: silentLogger });
  const answer = new TextEncoder().encode(
    JSON.stringify({
      id: "x",
      object: "chat.completion",
      choices: [
        { index: 0, message: { role: "assistant", content: "Hello!" }, finish_reason: "stop" },
      ],
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    }),
  );
  const json = { "content-type": "application/json" };
  globalThis.fetch = (async () =>
    new Response(answer, { headers: json })) as unknown as typeof fetch;
  const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] });
  const headers = {
    host: "127.0.0.1:8080",
    "content-type": "application/json",
    "content-length": String(body.length),
    accept: "*/*",
    "user-agent": "bench",
  };
  const request = () =>
    new Request("http://127.0.0.1:8080/v1/chat/completions", { method: "POST", headers, body });
  const qm = async () => {
    const res = await app.handle(request());
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`qm answered ${res.status}`);
  };
  const floor = async () => {
    await request().bytes();
    await new Response(answer, { headers: json }).arrayBuffer();
  };
  /** Median µs per request over RUNS runs, after a warm-up: wall time, and CPU time. */
  const measured = async (fn: () => Promise<void>, clients: number) => {
    const go = () =>
      Promise.all(
        Array.from({ length: clients }, async () => {
          for (let i = 0; i < REQUESTS / clients; i++) await fn();
        }),
      );
    await go();
    const runs: number[] = [];
    const cpu: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      await go();
      const c = process.cpuUsage(c0);
      runs.push(((performance.now() - t0) * 1000) / REQUESTS);
      cpu.push((c.user + c.system) / REQUESTS);
    }
    const median = (xs: number[]) =>
      Math.round(xs.sort((a, b) => a - b)[Math.floor(RUNS / 2)]! * 100) / 100;
    return { wall: median(runs), cpu: median(cpu) };
  };
  const perRequest = async (fn: () => Promise<void>, clients: number) =>
    (await measured(fn, clients)).wall;
  await qm();
  const c1 = await measured(qm, 1);
  if (c1Only)
    return {
      qm_us_per_req_c1: c1.wall,
      qm_cpu_us_per_req_c1: c1.cpu,
      qm_us_per_req_c32: Number.NaN,
      floor_us_per_req: Number.NaN,
      method: "",
    };
  return {
    qm_us_per_req_c1: c1.wall,
    qm_cpu_us_per_req_c1: c1.cpu,
    qm_us_per_req_c32: await perRequest(qm, 32),
    floor_us_per_req: await perRequest(floor, 32),
    method:
      `in-process: the listener's handler on a real Runtime, fetch answering from memory; ` +
      `median of ${RUNS} runs of ${REQUESTS} requests`,
  };
}

if (import.meta.main) {
  const at = process.argv.indexOf("--toml");
  const toml = at > 0 ? (process.argv[at + 1] ?? "") : "";
  console.log(JSON.stringify(await measure(toml, process.argv.includes("--c1"))));
  process.exit(0);
}
