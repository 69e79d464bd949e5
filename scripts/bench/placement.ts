/**
 * The placement decision across several GPUs: 8 cards × 64 models (est 2–20 GB, a quarter on
 * 2 or 4 cards, a few on fixed cards, some pinned), with random residents placed on the cards,
 * asked for random targets. Pure CPU, in this process: µs per decision, as the scheduler pays
 * it (`GroupPolicy.evictionFor` with per-card ceilings, `placeOnCards` inside).
 */
import { loadConfigText } from "../../src/config/index.ts";
import { placeOnCards } from "../../src/policy/cards.ts";
import { GroupPolicy } from "../../src/policy/group.ts";
import { rng, round } from "./util.ts";

const CARDS = 8;
const MODELS = 64;

export function placement(decisions = 20_000) {
  const rand = rng(11);
  const ids = Array.from({ length: MODELS }, (_, i) => `m${i}`);
  const want = ids.map((_, i) =>
    i % 4 === 0 ? (i % 8 === 0 ? 4 : 2) : i % 13 === 0 ? [i % CARDS] : 1,
  );
  const toml =
    `[resources]\ngpus = [${Array.from({ length: CARDS }, (_, i) => `{index = ${i}, vram_budget_gb = 48}`).join(", ")}]\n` +
    `[groups.pin]\nmembers = ["m1", "m2"]\npersistent = true\nexclusive = false\n` +
    ids
      .map(
        (id, i) =>
          `[models.${id}]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nest_vram_gb = ${2 + Math.floor(rand() * 19)}\ngpus = ${JSON.stringify(want[i])}\n`,
      )
      .join("");
  const config = loadConfigText(toml, { file: "bench.toml", env: {}, isPortFree: () => true });
  const cards = Array.from({ length: CARDS }, (_, index) => ({
    index,
    ceilingGb: 40 + Math.floor(rand() * 8),
  }));
  // Residents: place models one by one wherever the policy puts them (without evicting) until
  // the cards are full: most targets then need an eviction on the card(s) chosen.
  const placed = new Map<string, number[]>();
  const policy = new GroupPolicy(config, {
    vramGb: () => cards.reduce((s, c) => s + c.ceilingGb, 0),
    ramGb: () => 0,
    cards: () => cards,
    placement: (id) => placed.get(id),
  });
  const running: string[] = [];
  for (const id of ids) {
    const answer = policy.evictionFor(id, running);
    if (!answer.ok || answer.evict.length > 0 || !answer.gpus) continue;
    running.push(id);
    placed.set(id, answer.gpus);
  }
  const targets = Array.from({ length: decisions }, () => {
    let t = ids[Math.floor(rand() * MODELS)]!;
    while (running.includes(t)) t = ids[Math.floor(rand() * MODELS)]!;
    return t;
  });
  for (const t of targets.slice(0, 2000)) policy.evictionFor(t, running); // warm up the JIT
  const times: number[] = [];
  let fits = 0;
  let evicting = 0;
  for (const t of targets) {
    const t0 = performance.now();
    const a = policy.evictionFor(t, running);
    times.push(performance.now() - t0);
    if (a.ok) {
      fits++;
      if (a.evict.length > 0) evicting++;
    }
  }
  times.sort((a, b) => a - b);
  const us = (q: number) =>
    round(times[Math.min(times.length - 1, Math.floor(q * times.length))]! * 1000, 2);
  // The pure core alone, on the same residents.
  const residents = running.map((id) => ({
    id,
    estGb: config.models[id]!.estVramGb,
    gpus: placed.get(id)!,
    persistent: id === "m1" || id === "m2",
  }));
  const core: number[] = [];
  for (const t of targets) {
    const t0 = performance.now();
    placeOnCards({
      target: t,
      needGb: config.models[t]!.estVramGb,
      want: config.models[t]!.gpus ?? 1,
      cards,
      residents,
    });
    core.push(performance.now() - t0);
  }
  core.sort((a, b) => a - b);
  const coreUs = (q: number) =>
    round(core[Math.min(core.length - 1, Math.floor(q * core.length))]! * 1000, 2);
  return {
    cards: CARDS,
    models: MODELS,
    residents: running.length,
    decisions,
    admitted: fits,
    admitted_with_evictions: evicting,
    us_p50: us(0.5),
    us_p99: us(0.99),
    place_on_cards_us_p50: coreUs(0.5),
    place_on_cards_us_p99: coreUs(0.99),
    method:
      "GroupPolicy.evictionFor with 8 cards (ceilings 40–47 GB) and 64 models (est 2–20 GB; every 4th on 2 or 4 cards, some on a fixed card, 2 pinned), residents placed by the policy itself until nothing more fits beside them; random non-resident targets; 2000 warm-up decisions, then each timed alone",
  };
}

if (import.meta.main) console.log(JSON.stringify(placement()));
