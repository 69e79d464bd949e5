/**
 * The Responses qm keeps (`store`, on by default as OpenAI's; Codex CLI sends `store: false`),
 * for `previous_response_id` and `GET`/`DELETE /v1/responses/{id}`: in memory only, bounded in
 * entries (`server.responses_store`) and in bytes (`server.responses_store_mb`), the least
 * recently used dropped first. Each entry is the final Response object, this turn's input
 * items (`input_items`), and the chat conversation it ended — every earlier turn, this one's
 * input and its output, without `instructions` — which a next turn replays as its history.
 * One store per gateway, shared by all its listeners.
 */

import { QmError } from "../../shared/errors.ts";
import type { OaiMessage } from "../chat/wire.ts";
import type { Gateway } from "../gateway.ts";

type Obj = Record<string, unknown>;

export interface Kept {
  response: Obj;
  /** The chat messages a next turn replays (instructions not included, as OpenAI). */
  conversation: OaiMessage[];
  /** This turn's input items, each with an `id`. */
  inputItems: Obj[];
  /** The entry's size as counted against the byte bound (its JSON's length). */
  bytes: number;
}

/** How many evicted ids are remembered, so a 404 can say the response was evicted. */
const EVICTED_NAMES = 10_000;

export class ResponseStore {
  private readonly entries = new Map<string, Kept>();
  private readonly evicted = new Set<string>();
  private total = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxBytes: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get bytes(): number {
    return this.total;
  }

  /** Keeps an entry (most recent); evicts the least recently used past either bound. */
  put(id: string, entry: Omit<Kept, "bytes">): void {
    if (this.maxEntries === 0) return;
    const bytes =
      JSON.stringify(entry.response).length +
      JSON.stringify(entry.conversation).length +
      JSON.stringify(entry.inputItems).length;
    this.delete(id);
    if (bytes > this.maxBytes) {
      this.forget(id);
      return;
    }
    this.entries.set(id, { ...entry, bytes });
    this.total += bytes;
    for (const [old, kept] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.total <= this.maxBytes) break;
      this.entries.delete(old);
      this.total -= kept.bytes;
      this.forget(old);
    }
  }

  /** The entry, now the most recently used; undefined when not kept. */
  get(id: string): Kept | undefined {
    const kept = this.entries.get(id);
    if (!kept) return undefined;
    this.entries.delete(id);
    this.entries.set(id, kept);
    return kept;
  }

  delete(id: string): boolean {
    const kept = this.entries.get(id);
    if (!kept) return false;
    this.entries.delete(id);
    this.total -= kept.bytes;
    return true;
  }

  /** The 404 for an id that is not kept, saying why as far as qm knows. */
  missing(id: string, param?: string): QmError {
    const opts = param === undefined ? {} : { param };
    if (this.evicted.has(id)) {
      return new QmError(
        "not_found",
        `response "${id}" is no longer kept: qm keeps the ${this.maxEntries} most recently used responses ` +
          "in memory (server.responses_store, server.responses_store_mb) and this one was evicted",
        opts,
      );
    }
    return new QmError(
      "not_found",
      `response "${id}" was not kept: it was sent with store: false, deleted, answered before qm ` +
        `last started, or never existed${this.maxEntries === 0 ? " (server.responses_store = 0 keeps none)" : ""}`,
      opts,
    );
  }

  private forget(id: string): void {
    this.evicted.add(id);
    if (this.evicted.size > EVICTED_NAMES) {
      const first = this.evicted.values().next().value;
      if (first !== undefined) this.evicted.delete(first);
    }
  }
}

const stores = new WeakMap<Gateway, ResponseStore>();

/** The gateway's store, made on first use from its config. */
export function storeOf(gw: Gateway): ResponseStore {
  let s = stores.get(gw);
  if (!s) {
    const { responsesStore, responsesStoreBytes } = gw.config.server;
    s = new ResponseStore(responsesStore, responsesStoreBytes);
    stores.set(gw, s);
  }
  return s;
}
