/**
 * The matrix solver on a large config: 64 models and 200 allowed co-resident sets, asked for
 * every model against a realistic resident set. Pure CPU, in this process: µs per decision.
 */
import { loadConfigText } from "../../src/config/index.ts";
import { MatrixPolicy } from "../../src/policy/matrix.ts";
import { rng, round } from "./util.ts";

const MODELS = 64;
const SETS = 200;

export function matrixSolver(decisions = 20_000) {
  const rand = rng(42);
  const ids = Array.from({ length: MODELS }, (_, i) => `m${i}`);
  const sets = Array.from({ length: SETS }, () => {
    const size = 2 + Math.floor(rand() * 5);
    return [...new Set(Array.from({ length: size }, () => ids[Math.floor(rand() * MODELS)]!))];
  });
  const costs = ids.map((id) => `"${id}" = ${1 + Math.floor(rand() * 30)}`).join(", ");
  const toml =
    `[router]\npolicy = "matrix"\n[matrix]\nsets = ${JSON.stringify(sets)}\nevict_cost = { ${costs} }\n` +
    ids.map((id) => `[models.${id}]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\n`).join("");
  const config = loadConfigText(toml, { file: "bench.toml", env: {}, isPortFree: () => true });
  const policy = new MatrixPolicy(config);
  const running = [...new Set(Array.from({ length: 8 }, () => ids[Math.floor(rand() * MODELS)]!))];
  const targets = Array.from({ length: decisions }, () => ids[Math.floor(rand() * MODELS)]!);
  for (const t of targets.slice(0, 2000)) policy.evictionFor(t, running); // warm up the JIT
  const times: number[] = [];
  for (const t of targets) {
    const t0 = performance.now();
    policy.evictionFor(t, running);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const us = (q: number) =>
    round(times[Math.min(times.length - 1, Math.floor(q * times.length))]! * 1000, 2);
  return {
    models: MODELS,
    sets: SETS,
    running: running.length,
    decisions,
    us_p50: us(0.5),
    us_p99: us(0.99),
  };
}

if (import.meta.main) console.log(JSON.stringify(matrixSolver()));
