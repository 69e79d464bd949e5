/**
 * What a peer's own status says it serves, read without I/O: a qm's `GET /api/status` (or the
 * `event: status` / `event: model` of its `/api/events`), a llama-swap's `GET /running` with
 * `GET /v1/models`. Anything malformed reads as nothing known (`null`), never a throw.
 */
import { peerIdProblem } from "../config/ids.ts";
import { MAX_PEER_MODELS } from "./limits.ts";
import type { Offer } from "./route.ts";

export interface Discovered {
  models: Map<string, Offer>;
  /** Models loaded or loading on the peer: what it would have to evict for another. */
  resident: number;
  /** A qm's exact aliases (alias → model id); patterns (`claude-*`) cannot be listed. */
  aliases: Map<string, string>;
  /** What was left out of the peer's list (said once per peer by the watch). */
  dropped: Dropped;
}

/**
 * Names a peer listed that qm did not take: invalid ones (`peerIdProblem`: empty, over 256
 * characters, a control character or one an HTTP header cannot carry), each dropped alone, and
 * valid ones past the first `MAX_PEER_MODELS`.
 */
export interface Dropped {
  invalid: number;
  overCap: number;
  /** The first invalid name and why, for the log line. */
  example: string | null;
}

const noneDropped = (): Dropped => ({ invalid: 0, overCap: 0, example: null });

/** Counts `name` as invalid when it is; true when it is (then it is not taken). */
function refused(name: string, dropped: Dropped): boolean {
  const problem = peerIdProblem(name);
  if (problem === null) return false;
  dropped.invalid++;
  dropped.example ??= `${JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name)} ${problem}`;
  return true;
}

/** A log line for what was dropped from `peer`'s list, or null when nothing was. */
export function droppedLine(peer: string, d: Dropped): string | null {
  if (d.invalid === 0 && d.overCap === 0) return null;
  const parts: string[] = [];
  if (d.overCap > 0) parts.push(`${d.overCap} past the first ${MAX_PEER_MODELS}`);
  if (d.invalid > 0) parts.push(`${d.invalid} invalid (the first: ${d.example})`);
  return `peer ${peer}: names left out of its model list: ${parts.join("; ")}`;
}

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
  const dropped = noneDropped();
  let resident = 0;
  for (const m of json.models) {
    if (!isObject(m) || typeof m.id !== "string" || m.unlisted === true) continue;
    if (refused(m.id, dropped)) continue;
    if (models.size >= MAX_PEER_MODELS && !models.has(m.id)) {
      dropped.overCap++;
      continue;
    }
    models.set(m.id, offerOf(m.state));
    if (RESIDENT.has(String(m.state))) resident++;
    named.push([m.id, m.aliases]);
  }
  // An alias is routable only as an exact name: a pattern (`*`) matches names no list can
  // hold, so it stays the peer's own business (`PEER/NAME` still reaches it there). Aliases
  // are names a client sends and qm may send back (`X-QM-Model`), checked like ids, and
  // capped apart from them.
  const aliases = new Map<string, string>();
  for (const [id, list] of named) {
    if (!Array.isArray(list)) continue;
    for (const a of list) {
      if (typeof a !== "string" || a.includes("*") || peerIdProblem(a) !== null) continue;
      if (models.has(a) || aliases.has(a)) continue;
      if (aliases.size >= MAX_PEER_MODELS) break;
      aliases.set(a, id);
    }
  }
  return { models, resident, aliases, dropped };
}

/** One qm `event: model` (`{model, state}`): the model's new state, or why it is refused. */
export function fromQmModelEvent(
  json: unknown,
): { model: string; offer: Offer } | { invalid: string } | null {
  if (!isObject(json) || typeof json.model !== "string") return null;
  const problem = peerIdProblem(json.model);
  if (problem !== null) return { invalid: `${JSON.stringify(json.model.slice(0, 40))} ${problem}` };
  return { model: json.model, offer: offerOf(json.state) };
}

/** A llama-swap: `/v1/models` lists what it serves, `/running` what is loaded and its state. */
export function fromLlamaSwap(models: unknown, running: unknown): Discovered | null {
  if (!isObject(models) || !Array.isArray(models.data)) return null;
  const out = new Map<string, Offer>();
  const dropped = noneDropped();
  const take = (id: string, offer: Offer): boolean => {
    if (refused(id, dropped)) return false;
    if (out.size >= MAX_PEER_MODELS && !out.has(id)) {
      dropped.overCap++;
      return false;
    }
    out.set(id, offer);
    return true;
  };
  for (const m of models.data) if (isObject(m) && typeof m.id === "string") take(m.id, "offered");
  let resident = 0;
  const list = isObject(running) && Array.isArray(running.running) ? running.running : [];
  for (const r of list) {
    if (!isObject(r) || typeof r.model !== "string") continue;
    if (take(r.model, r.state === "ready" ? "ready" : "offered")) resident++;
  }
  return { models: out, resident, aliases: new Map(), dropped };
}
