/**
 * The routing decision for a model name among peers: 3 peers × 50 models each (some models on
 * two or three boxes, some loaded and ready, others only offered), asked for bare names, for
 * `PEER/MODEL` and for names nobody serves. Pure CPU, in this process: µs per decision, as a
 * request pays it (`PeerTable.resolve`, the peer model built for the exchange included).
 */
import { loadConfigText } from "../../src/config/index.ts";
import { PeerTable } from "../../src/peers/table.ts";
import { rng, round } from "./util.ts";

const PEERS = 3;
const MODELS = 50;

export function peerRoute(decisions = 20_000) {
  const rand = rng(7);
  // Peer p serves m{p*30} … m{p*30+49}: neighbours share 20 models.
  const served = Array.from({ length: PEERS }, (_, p) =>
    Array.from({ length: MODELS }, (_, i) => `m${p * 30 + i}`),
  );
  const toml = served
    .map(
      (models, p) =>
        `[peers.box${p}]\nurl = "http://10.0.0.${p + 2}:8080"\nkind = "openai"\nmodels = ${JSON.stringify(models)}\n`,
    )
    .join("");
  const config = loadConfigText(toml, { file: "bench.toml", env: {}, isPortFree: () => true });
  const table = new PeerTable(config.peers, () => performance.now());
  // Half of each peer's models loaded and ready, with some requests in flight.
  served.forEach((models, p) => {
    const offers = new Map(models.map((m) => [m, rand() < 0.5 ? "ready" : "offered"] as const));
    table.discovered(`box${p}`, offers, Math.floor(rand() * 8));
    for (let i = Math.floor(rand() * 4); i > 0; i--) table.begin(`box${p}`);
  });
  const all = [...new Set(served.flat())];
  const names = Array.from({ length: decisions }, () => {
    const r = rand();
    if (r < 0.8) return all[Math.floor(rand() * all.length)]!;
    if (r < 0.95) {
      const p = Math.floor(rand() * PEERS);
      return `box${p}/${served[p]![Math.floor(rand() * MODELS)]!}`;
    }
    return `nobody-${Math.floor(rand() * 100)}`;
  });
  for (const n of names.slice(0, 2000)) table.resolve(n); // warm up the JIT
  const times: number[] = [];
  let routed = 0;
  for (const n of names) {
    const t0 = performance.now();
    const m = table.resolve(n);
    times.push(performance.now() - t0);
    if (m) routed++;
  }
  times.sort((a, b) => a - b);
  const us = (q: number) =>
    round(times[Math.min(times.length - 1, Math.floor(q * times.length))]! * 1000, 2);
  return {
    peers: PEERS,
    models_per_peer: MODELS,
    decisions,
    routed,
    us_p50: us(0.5),
    us_p99: us(0.99),
    method:
      "PeerTable.resolve on 3 openai peers × 50 models (20 shared between neighbours, half ready, some in flight): 80% bare names, 15% PEER/MODEL, 5% unknown; 2000 warm-up decisions, then each timed alone",
  };
}

if (import.meta.main) console.log(JSON.stringify(peerRoute()));
