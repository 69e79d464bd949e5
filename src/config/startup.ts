/**
 * Preload and the cards (issue-free parts only, see `Issues.within`): `server.preload` and the
 * models' `preload = true` as one ordered list, and `resources.gpus` against the models'
 * `gpus`.
 */
import { fileOrder } from "./build-models.ts";
import type { Issues } from "./issues.ts";
import type { SourceMap } from "./locate.ts";
import type { ConfigFile } from "./schema.ts";
import { didYouMean } from "./suggest.ts";
import type { GpuBudget } from "./types.ts";

/** `server.preload` first, then models with `preload = true` in file order; each once. */
export function buildPreload(file: ConfigFile, map: SourceMap, issues: Issues): string[] {
  const ids = Object.keys(file.models);
  const out: string[] = [];
  if (!issues.within(["server", "preload"])) {
    file.server.preload.forEach((name, i) => {
      if (!Object.hasOwn(file.models, name)) {
        issues.at(["server", "preload", i], `unknown model "${name}"${didYouMean(name, ids)}`);
      } else if (!out.includes(name)) out.push(name);
    });
  }
  for (const id of fileOrder(map, "models", ids)) {
    if (file.models[id]?.preload === true && !out.includes(id)) out.push(id);
  }
  return out;
}

/** `resources.gpus` by index; each model's `gpus` must name cards (and counts) that exist. */
export function checkGpus(file: ConfigFile, issues: Issues): GpuBudget[] {
  const cards: GpuBudget[] = [];
  if (!issues.within(["resources", "gpus"])) {
    file.resources.gpus.forEach((g, i) => {
      if (cards.some((c) => c.index === g.index)) {
        issues.at(["resources", "gpus", i, "index"], `GPU ${g.index} is listed twice`);
      } else cards.push({ index: g.index, vramBudgetGb: g.vram_budget_gb });
    });
    cards.sort((a, b) => a.index - b.index);
  }
  for (const [id, m] of Object.entries(file.models)) {
    const at = ["models", id, "gpus"];
    if (Array.isArray(m.gpus) && m.gpus.length === 0 && !issues.within(at)) {
      issues.at(at, "must list at least one GPU (or give a count)");
    }
  }
  if (cards.length === 0) return cards;
  const known = cards.map((c) => c.index);
  for (const [id, m] of Object.entries(file.models)) {
    const at = ["models", id, "gpus"];
    if (issues.within(at)) continue;
    if (typeof m.gpus === "number") {
      if (m.gpus > cards.length) {
        issues.at(at, `needs ${m.gpus} GPUs but resources.gpus lists ${cards.length}`);
      }
      continue;
    }
    m.gpus.forEach((index, i) => {
      if (!known.includes(index)) {
        issues.at([...at, i], `GPU ${index} is not in resources.gpus (${known.join(", ")})`);
      }
    });
  }
  return cards;
}
