/**
 * What a key may see of the models (docs/security.md, "What each key sees"): a model its
 * `models` patterns allow, and — for a key that is no admin — only the parts of status and of
 * `/api/events` about such models and its own requests. An admin key (and `anonymous`, when no
 * key is configured) sees everything. Every filter here starts from `visible`.
 */
import type { ModelConfig } from "../../config/types.ts";
import type { HistoryJson } from "../../gpu/history.ts";
import type { ApiKey } from "../../keys/api-key.ts";
import type { ModelLookup, QmEvent } from "../gateway.ts";
import type { StatusJson } from "../status-json.ts";

/** `key` may use `model` (a variant by its base's names). */
export function visible(gw: ModelLookup, key: ApiKey, model: ModelConfig): boolean {
  if (key.allModels) return true;
  return key.allows(model, model.variantOf ? gw.resolve(model.variantOf.base) : undefined);
}

/** `key` may see the model with id `id` (one no longer configured only when it sees all). */
export function visibleId(gw: ModelLookup, key: ApiKey, id: string): boolean {
  if (key.allModels) return true;
  const model = gw.resolve(id);
  return model !== undefined && model.id === id && visible(gw, key, model);
}

/**
 * Status as `key` may see it. An admin sees it whole; another key sees its models, the waits
 * and swaps among them, its own waiting requests, and the box's memory without other models'
 * names. Peers (whose model lists are the box's business) are left out.
 */
export function statusFor(gw: ModelLookup, key: ApiKey, status: StatusJson): StatusJson {
  if (key.admin) return status;
  const seen = (id: string) => visibleId(gw, key, id);
  const models = status.models.filter((m) => seen(m.id));
  const { peers: _peers, preload, resources, ...rest } = status;
  const out: StatusJson = {
    ...rest,
    models,
    queue: { depth: models.reduce((n, m) => n + m.queued, 0) },
    swaps: status.swaps
      .filter((s) => seen(s.target))
      .map((s) => ({ ...s, evict: s.evict.filter(seen) })),
    resources: resources.gpus
      ? {
          ...resources,
          gpus: resources.gpus.map((g) => ({ ...g, models: g.models.filter(seen) })),
        }
      : resources,
  };
  if (preload) {
    out.preload = {
      pending: preload.pending.filter(seen),
      loading: preload.loading !== null && seen(preload.loading) ? preload.loading : null,
      done: preload.done.filter(seen),
      skipped: preload.skipped.filter((s) => seen(s.model)),
    };
  }
  if (status.waiting) out.waiting = status.waiting.filter((w) => w.key === key.name);
  return out;
}

/**
 * An `/api/events` event as `key` may see it, or null. A non-admin key gets its own requests'
 * records, and the state, load and hold changes of its models; a `status` snapshot filtered as
 * `statusFor`; the box's memory (`vram`) without other models' names. Nothing else — peer and
 * config events, and any kind added later, until it is added here.
 */
export function eventFor(gw: ModelLookup, key: ApiKey, e: QmEvent): QmEvent | null {
  if (key.admin) return e;
  switch (e.type) {
    case "request":
      return e.key === key.name ? e : null;
    case "model":
    case "load":
    case "hold":
      return typeof e.model === "string" && visibleId(gw, key, e.model) ? e : null;
    case "vram": {
      const gpus = e.gpus as { models: string[] }[] | undefined;
      if (!gpus) return e;
      return {
        ...e,
        gpus: gpus.map((g) => ({ ...g, models: g.models.filter((m) => visibleId(gw, key, m)) })),
      };
    }
    default:
      return null;
  }
}

/**
 * `/api/history` as `key` may see it. An admin sees it whole; another key sees the box's memory
 * with only its models' shares named, the residency of its models, the swaps that loaded one of
 * them (evicting only what it sees named), and the stops of its models — as `statusFor` shows
 * the swaps in progress.
 */
export function historyFor(gw: ModelLookup, key: ApiKey, h: HistoryJson): HistoryJson {
  if (key.admin) return h;
  const seen = (id: string) => visibleId(gw, key, id);
  const mine = (models: Record<string, number>) =>
    Object.fromEntries(Object.entries(models).filter(([id]) => seen(id)));
  return {
    memory: h.memory.map((s) => ({
      t: s.t,
      cards: s.cards.map((c) => ({ ...c, models: mine(c.models) })),
    })),
    residency: h.residency.filter((r) => seen(r.model)),
    swaps: h.swaps
      .map((s) => ({ ...s, evicted: s.evicted.filter(seen) }))
      .filter((s) => (s.loaded === null ? s.evicted.length > 0 : seen(s.loaded))),
  };
}
