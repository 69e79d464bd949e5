/**
 * What a peer's own status says it serves, read without I/O: a qm's `GET /api/status` (or the
 * `event: status` / `event: model` of its `/api/events`), a llama-swap's `GET /running` with
 * `GET /v1/models`. Anything malformed reads as nothing known (`null`), never a throw.
 */
import type { Offer } from "./route.ts";

export interface Discovered {
  models: Map<string, Offer>;
  /** Models loaded or loading on the peer: what it would have to evict for another. */
  resident: number;
  /** A qm's exact aliases (alias → model id); patterns (`claude-*`) cannot be listed. */
  aliases: Map<string, string>;
}

/** The longest alias taken from a peer's status (a model name, not a document). */
const MAX_ALIAS = 256;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null;

/** A qm model state as routing sees it: ready to answer now, or only offered (it can load). */
export function offerOf(state: unknown): Offer {
  return state === "ready" ? "ready" : "offered";
}

const RESIDENT = new Set(["ready", "starting", "stopping", "sleeping"]);

/** A qm's `/api/status` (the `event: status` data is the same document). */
export function fromQmStatus(json: unknown): Discovered | null {
  if (!isObject(json) || !Array.isArray(json.models)) return null;
  const models = new Map<string, Offer>();
  const named: [string, unknown][] = [];
  let resident = 0;
  for (const m of json.models) {
    if (!isObject(m) || typeof m.id !== "string" || m.unlisted === true) continue;
    models.set(m.id, offerOf(m.state));
    if (RESIDENT.has(String(m.state))) resident++;
    named.push([m.id, m.aliases]);
  }
  // An alias is routable only as an exact name: a pattern (`*`) matches names no list can
  // hold, so it stays the peer's own business (`PEER/NAME` still reaches it there).
  const aliases = new Map<string, string>();
  for (const [id, list] of named) {
    if (!Array.isArray(list)) continue;
    for (const a of list) {
      if (typeof a !== "string" || a === "" || a.length > MAX_ALIAS || a.includes("*")) continue;
      if (!models.has(a) && !aliases.has(a)) aliases.set(a, id);
    }
  }
  return { models, resident, aliases };
}

/** One qm `event: model` (`{model, state}`): the model's new state, or null. */
export function fromQmModelEvent(json: unknown): { model: string; offer: Offer } | null {
  if (!isObject(json) || typeof json.model !== "string") return null;
  return { model: json.model, offer: offerOf(json.state) };
}

/** A llama-swap: `/v1/models` lists what it serves, `/running` what is loaded and its state. */
export function fromLlamaSwap(models: unknown, running: unknown): Discovered | null {
  if (!isObject(models) || !Array.isArray(models.data)) return null;
  const out = new Map<string, Offer>();
  for (const m of models.data)
    if (isObject(m) && typeof m.id === "string") out.set(m.id, "offered");
  let resident = 0;
  const list = isObject(running) && Array.isArray(running.running) ? running.running : [];
  for (const r of list) {
    if (!isObject(r) || typeof r.model !== "string") continue;
    resident++;
    out.set(r.model, r.state === "ready" ? "ready" : "offered");
  }
  return { models: out, resident, aliases: new Map() };
}
