/**
 * Admission on managed mistral.rs nodes (src/peers/mistralrs.md), as a decorator around the
 * box's own policy: a node model's answer looks only at its node's residents and settings; a
 * local model's answer never sees a node model. Pure, like every policy: what it knows of the
 * nodes now comes through `NodeView`, read, never changed.
 */
import type { Config, ModelConfig, NodeSettings } from "../config/types.ts";
import { fitWithin, type Resident } from "./budget.ts";
import type { Eviction, EvictionPolicy } from "./types.ts";

/** What admission reads of the managed nodes now (the runtime's keeper of the nodes). */
export interface NodeView {
  /** Why `model` cannot load on its node now (the node is down, it does not list it), or null. */
  refusal(model: ModelConfig): string | null;
  /**
   * false once the node answered an unload with `no_loader_config` (it cannot unload: nothing
   * is evicted there); true once it has unloaded a model; null before either is known.
   */
  canUnload(node: string): boolean | null;
}

export class NodeAwarePolicy implements EvictionPolicy {
  constructor(
    private readonly inner: EvictionPolicy,
    private readonly config: Pick<Config, "models" | "peers">,
    private readonly nodes: NodeView | null = null,
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
    const refusal = this.nodes?.refusal(model) ?? null;
    if (refusal !== null) return { ok: false, reason: refusal };
    const residents = running
      .filter((id) => id !== target && onNode(id) === node.node)
      .map((id) => models[id]!);
    if (this.nodes?.canUnload(node.node) === false) {
      const over = overLimits(model, residents, settings);
      if (over === null) return { ok: true, evict: [], budget: [] };
      return {
        ok: false,
        reason: `node "${node.node}" cannot unload models (it answered no_loader_config) and ${over}: model "${target}" cannot load there`,
      };
    }
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

/** How `target` beside all of `residents` breaks the node's limits, or null when it fits. */
function overLimits(
  target: ModelConfig,
  residents: readonly ModelConfig[],
  s: NodeSettings,
): string | null {
  if (s.maxLoaded > 0 && residents.length >= s.maxLoaded) {
    return `it holds ${residents.length} models, at most ${s.maxLoaded} (max_loaded)`;
  }
  if (s.vramBudgetGb > 0) {
    const used = residents.reduce((sum, m) => sum + m.estVramGb, 0);
    if (target.estVramGb <= 0 && residents.length > 0) {
      return `model "${target.id}" has no est_vram_gb to fit beside ${residents.length} loaded models`;
    }
    if (used + target.estVramGb > s.vramBudgetGb) {
      return `${gb(used)} of its ${gb(s.vramBudgetGb)} budget is in use and model "${target.id}" needs ${gb(target.estVramGb)}`;
    }
  }
  return null;
}

/** What of a node's loaded models to unload so they keep to its limits (`nodeExcess`). */
export interface Excess {
  /** How they break the limits (`3 models loaded, more than max_loaded = 1`), or null. */
  over: string | null;
  /** Least recently used first. */
  evict: string[];
  /** Why some excess stays loaded (pinned, busy), or null when `evict` clears it all. */
  stays: string | null;
}

/**
 * Models found loaded on a node (adopted) may hold more than its limits allow: which of them
 * to unload, least recently used first, so that `residents` (LRU first) keep to `max_loaded`
 * and `vram_budget_gb`? Pinned models and `busy` ones are never chosen; the excess they leave
 * is said in `stays`. Residents of unknown estimate count 0 against the budget here.
 */
export function nodeExcess(
  residents: readonly ModelConfig[],
  busy: ReadonlySet<string>,
  s: NodeSettings,
): Excess {
  let count = residents.length;
  let used = residents.reduce((sum, m) => sum + Math.max(0, m.estVramGb), 0);
  const overCount = () => s.maxLoaded > 0 && count > s.maxLoaded;
  const overBudget = () => s.vramBudgetGb > 0 && used > s.vramBudgetGb;
  const describe = () =>
    overCount()
      ? `${count} models loaded, more than max_loaded = ${s.maxLoaded}`
      : `${gb(used)} loaded, more than vram_budget_gb = ${s.vramBudgetGb}`;
  if (!overCount() && !overBudget()) return { over: null, evict: [], stays: null };
  const over = describe();
  const evict: string[] = [];
  const kept = { pinned: [] as string[], busy: [] as string[] };
  for (const m of residents) {
    if (!overCount() && !overBudget()) break;
    if (m.node?.pinned) kept.pinned.push(m.id);
    else if (busy.has(m.id)) kept.busy.push(m.id);
    else {
      evict.push(m.id);
      count--;
      used -= Math.max(0, m.estVramGb);
    }
  }
  if (!overCount() && !overBudget()) return { over, evict, stays: null };
  const why = [
    kept.pinned.length > 0 ? `pinned (${kept.pinned.join(", ")}) are not unloaded` : "",
    kept.busy.length > 0 ? `busy (${kept.busy.join(", ")}) wait until they drain` : "",
  ].filter(Boolean);
  return { over, evict, stays: `${describe()}; ${why.join("; ")}` };
}

/** How many of `list` are in `evict`. */
function countOf(evict: readonly string[], list: readonly ModelConfig[]): number {
  let n = 0;
  for (const m of list) if (evict.includes(m.id)) n++;
  return n;
}
