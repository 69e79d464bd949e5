/**
 * Load suite: mixed requests (streamed or not, OpenAI or Anthropic) from concurrent clients
 * over three demo models in one swap group, so qm keeps swapping under them, while about a
 * fifth of the requests are abandoned by their client at a random point (waiting, loading,
 * mid-stream). Afterwards every counter in /api/status must come back to 0.
 */

import type { StatusJson } from "../../src/api/status-json.ts";
import { log } from "../bench/util.ts";
import { configToml, demoCmd, expectedText, type Qm, status } from "./qm.ts";
import { type Api, apiPath, chatBody, exchange, type Kind, type Outcome } from "./verdict.ts";

export const LOAD_MODELS = ["load-a", "load-b", "load-c"] as const;
const TOKENS = 8;

export function loadConfig(stateDir: string): string {
  const flags = `--tokens ${TOKENS} --token-ms 3`;
  const models = LOAD_MODELS.map(
    (m) => `[models.${m}]\ncmd = ${JSON.stringify(demoCmd(m, flags))}\n`,
  );
  return configToml({
    stateDir,
    body: `[groups.swap]\nmembers = ${JSON.stringify(LOAD_MODELS)}\nswap = true\n\n${models.join("\n")}`,
  });
}

export interface LoadResult {
  requests: number;
  lost: number;
  countersNonzero: number;
  kinds: Record<Kind, number>;
}

/** The counters of /api/status that must all be 0 once nothing is running: name → value. */
export function counters(s: StatusJson): [string, number][] {
  const out: [string, number][] = [
    ["queue.depth", s.queue.depth],
    ["swaps", s.swaps.length],
  ];
  for (const m of s.models) {
    out.push([`${m.id}.inflight`, m.inflight], [`${m.id}.queued`, m.queued]);
    out.push([`${m.id}.leases`, m.leases]);
  }
  return out;
}

/** Polls /api/status until every counter is 0 or `ms` passed; returns the nonzero ones. */
export async function settledCounters(qm: Qm, ms: number, key?: string) {
  const deadline = Date.now() + ms;
  for (;;) {
    let nonzero: [string, number][];
    try {
      nonzero = counters(await status(qm, key)).filter(([, v]) => v !== 0);
    } catch (err) {
      nonzero = [[`status unavailable: ${(err as Error).message}`, 1]];
    }
    if (nonzero.length === 0 || Date.now() >= deadline) return nonzero;
    await Bun.sleep(100);
  }
}

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)] as T;

/**
 * `total` requests from `clients` concurrent clients, stopping early at `deadline` (epoch ms).
 * Each client stays on one model for a short burst, as an agent does, so swaps come in runs.
 */
export async function loadSuite(qm: Qm, total: number, clients: number, deadline: number) {
  const kinds: Record<Kind, number> = {
    ok: 0,
    error: 0,
    cut: 0,
    truncated: 0,
    wrong: 0,
    hung: 0,
    aborted: 0,
  };
  const examples = new Map<Kind, string>();
  let issued = 0;
  const t0 = Date.now();
  const client = async () => {
    let model: string = pick(LOAD_MODELS);
    while (issued < total && Date.now() < deadline) {
      issued++;
      if (Math.random() < 0.25) model = pick(LOAD_MODELS);
      const api: Api = Math.random() < 0.6 ? "openai" : "anthropic";
      const stream = Math.random() < 0.5;
      // Half the abandoned requests go after a random delay (queued, loading or mid-answer),
      // the other half of the streamed ones after a random number of tokens.
      const abort = Math.random() < 0.2;
      const byTime = abort && (!stream || Math.random() < 0.5);
      const o: Outcome = await exchange({
        url: qm.url + apiPath(api),
        api,
        stream,
        body: chatBody(model, stream, TOKENS),
        expected: expectedText(model, TOKENS),
        boundMs: 20_000,
        ...(byTime ? { abortAfterMs: Math.floor(Math.random() * 300) } : {}),
        ...(abort && !byTime ? { abortAfterTokens: 1 + Math.floor(Math.random() * TOKENS) } : {}),
      });
      // A request abandoned on purpose that still finished first is simply ok.
      kinds[o.kind]++;
      if (!examples.has(o.kind) && o.kind !== "ok" && o.kind !== "aborted") {
        examples.set(o.kind, `${api} stream=${stream} ${model}: ${o.status} ${o.detail}`);
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  const seconds = (Date.now() - t0) / 1000;
  const lost = kinds.cut + kinds.truncated + kinds.wrong + kinds.hung;
  log(`load: ${issued} requests in ${seconds.toFixed(1)} s: ${JSON.stringify(kinds)}`);
  for (const [k, e] of examples) log(`load: first ${k}: ${e}`);
  const nonzero = await settledCounters(qm, 5000);
  if (nonzero.length > 0) log(`load: counters not back to 0 after 5 s: ${JSON.stringify(nonzero)}`);
  return { requests: issued, lost, countersNonzero: nonzero.length, kinds } satisfies LoadResult;
}
