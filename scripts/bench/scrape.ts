/**
 * `/metrics` scrape time with 50 models: a real Runtime (stand-in processes) whose metrics have
 * heard requests on every model through four APIs, with statuses, latencies, TTFT and tokens;
 * then the time of one scrape (`QmMetrics.text()`: gauges read from the runtime's state, then
 * prom-client's text format), median and max of 50.
 *
 * Run by bench.ts in a child process: bun scripts/bench/scrape.ts → one JSON line on stdout.
 */

import { loadConfigText } from "../../src/config/index.ts";
import type { ModelConfig } from "../../src/config/types.ts";
import type { RequestRecord } from "../../src/observe/record.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import type { ModelServer } from "../../src/runtime/swap-runner.ts";
import { systemClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";

const MODELS = 50;
const SCRAPES = 50;
const APIS = ["openai", "anthropic", "responses", "ollama"] as const;

export interface Scrape {
  models: number;
  series_lines: number;
  bytes: number;
  scrape_ms_p50: number;
  scrape_ms_max: number;
  method: string;
}

export function metricsScrape(): Scrape {
  const run = Bun.spawnSync([process.execPath, import.meta.path], { stderr: "inherit" });
  if (run.exitCode !== 0) throw new Error(`scrape run failed (exit ${run.exitCode})`);
  return JSON.parse(run.stdout.toString()) as Scrape;
}

function standIn(model: ModelConfig): ModelServer {
  return {
    state: "stopped",
    pid: null,
    model,
    start: () => Promise.resolve(),
    stop: () => Promise.resolve(),
    logs: () => [],
    stderrTail: () => [],
  } as unknown as ModelServer;
}

async function measure(): Promise<Scrape> {
  const toml = Array.from(
    { length: MODELS },
    (_, i) => `[models.model-${i}]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\n`,
  ).join("");
  const cfg = loadConfigText(toml, { file: "bench.toml", env: {}, isPortFree: () => true });
  const rt = new Runtime(cfg, { clock: systemClock, log: silentLogger, makeProcess: standIn });
  let n = 0;
  for (let i = 0; i < MODELS; i++) {
    for (const api of APIS) {
      for (const status of [200, 200, 200, 400, 502]) {
        n++;
        const r: RequestRecord = {
          id: 0,
          time: Date.now(),
          key: "anonymous",
          model: `model-${i}`,
          api,
          status,
          answered: status === 200,
          wait_ms: n % 7,
          swap: n % 11 === 0,
          duration_ms: 50 + (n % 5000),
          ttft_ms: 10 + (n % 900),
          prompt_tokens: 100 + n,
          completion_tokens: 20 + (n % 300),
          cached_tokens: n % 50,
          finish_reason: "stop",
        };
        rt.metrics.request(r);
      }
    }
  }
  let text = await rt.metrics.text();
  const times: number[] = [];
  for (let s = 0; s < SCRAPES; s++) {
    const t0 = performance.now();
    text = await rt.metrics.text();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    models: MODELS,
    series_lines: text.split("\n").filter((l) => l !== "" && !l.startsWith("#")).length,
    bytes: text.length,
    scrape_ms_p50: round(times[Math.floor(SCRAPES / 2)]!),
    scrape_ms_max: round(times[SCRAPES - 1]!),
    method: `${MODELS} models × ${APIS.length} APIs with requests recorded; QmMetrics.text() in-process, ${SCRAPES} scrapes`,
  };
}

if (import.meta.main) {
  console.log(JSON.stringify(await measure()));
  process.exit(0);
}
