/**
 * Admission on managed mistral.rs nodes (src/peers/mistralrs.md), as a decorator around the
 * box's own policy: a node model's answer looks only at its node's residents and settings; a
 * local model's answer never sees a node model. Pure, like every policy.
 */
import type { Config, ModelConfig, NodeSettings } from "../config/types.ts";
import { fitWithin, type Resident } from "./budget.ts";
import type { Eviction, EvictionPolicy } from "./types.ts";

export class NodeAwarePolicy implements EvictionPolicy {
  constructor(
    private readonly inner: EvictionPolicy,
    private readonly config: Pick<Config, "models" | "peers">,
  ) {}

  addVariant(variant: string, base: string): void {
    this.inner.addVariant(variant, base);
  }

  evictionFor(target: string, running: readonly string[]): Eviction {
    const models = this.config.models;
    const onNode = (id: string) => models[id]?.node?.node;
    const model = models[target];
    const node = model?.node;
    if (!model || !node) {
      return this.inner.evictionFor(
        target,
        running.filter((id) => onNode(id) === undefined),
      );
    }
    const settings = this.config.peers[node.node]?.node;
    if (!settings) return { ok: false, reason: `node "${node.node}" is no longer configured` };
    const residents = running
      .filter((id) => id !== target && onNode(id) === node.node)
      .map((id) => models[id]!);
    return nodeEviction(model, residents, settings);
  }
}

const gb = (n: number) => `${Math.round(n * 100) / 100} GB`;

/**
 * To load `target` on its node, which of the node's `residents` (least-recently-used first)
 * must be unloaded? Pinned residents are charged and never chosen.
 */
export function nodeEviction(
  target: ModelConfig,
  residents: readonly ModelConfig[],
  s: NodeSettings,
): Eviction {
  const node = target.node!.node;
  const pinned = (m: ModelConfig) => m.node?.pinned === true;
  const evict: string[] = [];
  let left = [...residents];
  if (s.vramBudgetGb > 0) {
    if (target.estVramGb <= 0) {
      // Its size cannot be accounted for: it runs with nothing unpinned beside it.
      const pins = left.filter(pinned);
      const charged = pins.reduce((sum, m) => sum + m.estVramGb, 0);
      if (charged >= s.vramBudgetGb) {
        return {
          ok: false,
          reason: `model "${target.id}" has no est_vram_gb on node "${node}" and its pinned models (${pins.map((m) => m.id).join(", ")}) hold its budget of ${gb(s.vramBudgetGb)}`,
        };
      }
      evict.push(...left.filter((m) => !pinned(m)).map((m) => m.id));
      left = pins;
    } else {
      const fit = fitWithin({
        pool: "VRAM",
        target,
        need: target.estVramGb,
        limit: s.vramBudgetGb,
        residents: left.map((m): Resident => ({ model: m, persistent: pinned(m) })),
        estimate: (m) => m.estVramGb,
        evictable: () => true,
        unknownIsFree: false,
      });
      if (fit.kind === "cannot") return { ok: false, reason: `node "${node}": ${fit.reason}` };
      if (fit.kind === "fits") {
        evict.push(...fit.evict);
        const gone = new Set(fit.evict);
        left = left.filter((m) => !gone.has(m.id));
      }
    }
  }
  if (s.maxLoaded > 0) {
    for (const m of left) {
      if (left.length - countOf(evict, left) < s.maxLoaded) break;
      if (pinned(m) || evict.includes(m.id)) continue;
      evict.push(m.id);
    }
    const staying = left.filter((m) => !evict.includes(m.id));
    if (staying.length >= s.maxLoaded) {
      return {
        ok: false,
        reason: `node "${node}" holds at most ${s.maxLoaded} models (max_loaded) and its pinned ones (${staying.map((m) => m.id).join(", ")}) fill it: model "${target.id}" cannot load`,
      };
    }
  }
  return { ok: true, evict, budget: evict };
}

/** How many of `list` are in `evict`. */
function countOf(evict: readonly string[], list: readonly ModelConfig[]): number {
  let n = 0;
  for (const m of list) if (evict.includes(m.id)) n++;
  return n;
}
