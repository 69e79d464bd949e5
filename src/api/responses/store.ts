/**
 * The Responses qm keeps (`store`, on by default as OpenAI's; Codex CLI sends `store: false`),
 * for `previous_response_id` and `GET`/`DELETE /v1/responses/{id}`: in memory, bounded in
 * entries (`server.responses_store`) and in bytes (`server.responses_store_mb`), the least
 * recently used dropped first; and, with a database (`[store]`, src/store/design.md), kept
 * there too, so that they outlast a restart — the memory is then a cache of it. Each entry is
 * the final Response object, this turn's input items (`input_items`), the chat conversation it
 * ended — every earlier turn, this one's input and its output, without `instructions` — which a
 * next turn replays as its history, and the key that made it: only that key, or an admin key,
 * finds it; for any other it does not exist. One store per gateway, shared by its listeners.
 */

import { QmError } from "../../shared/errors.ts";
import type { ResponseRows } from "../../store/responses.ts";
import type { OaiMessage } from "../chat/wire.ts";
import type { Gateway } from "../gateway.ts";

type Obj = Record<string, unknown>;

export interface Kept {
  response: Obj;
  /** The chat messages a next turn replays (instructions not included, as OpenAI). */
  conversation: OaiMessage[];
  /** This turn's input items, each with an `id`. */
  inputItems: Obj[];
  /** The name of the key that made it. */
  owner: string;
  /** The entry's size as counted against the byte bound (its JSON's length). */
  bytes: number;
}

/** Who asks for a kept response: a request's key. */
export interface Asker {
  readonly name: string;
  readonly admin: boolean;
}

/** How many evicted ids are remembered, so a 404 can say the response was evicted. */
const EVICTED_NAMES = 10_000;

export class ResponseStore {
  private readonly entries = new Map<string, Kept>();
  /** Evicted ids, with their owners (only the owner is told an id was evicted). */
  private readonly evicted = new Map<string, string>();
  private total = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxBytes: number,
    /** The database's rows, or null: memory only. */
    private readonly rows: ResponseRows | null = null,
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
    this.rows?.put(id, entry);
    this.cache(id, entry);
  }

  /**
   * The entry, now the most recently used; undefined when not kept, or when it is another
   * key's and `asker` is no admin.
   */
  get(id: string, asker: Asker): Kept | undefined {
    let kept = this.entries.get(id);
    if (kept) {
      this.entries.delete(id);
      this.entries.set(id, kept);
    } else if (this.rows) {
      const row = this.rows.get(id);
      if (row) {
        this.cache(id, { ...row, conversation: row.conversation as unknown as OaiMessage[] });
        kept = this.entries.get(id);
      }
    }
    return kept && mayRead(asker, kept.owner) ? kept : undefined;
  }

  /** Deletes it for `asker`: false when not kept, or another key's and `asker` is no admin. */
  delete(id: string, asker: Asker): boolean {
    if (!this.get(id, asker)) return false;
    this.drop(id);
    this.rows?.delete(id);
    return true;
  }

  /** The 404 for an id not kept (for `asker`), saying why as far as qm knows and may say. */
  missing(id: string, asker: Asker, param?: string): QmError {
    const opts = param === undefined ? {} : { param };
    const owner = this.evicted.get(id);
    if (owner !== undefined && mayRead(asker, owner)) {
      return new QmError(
        "not_found",
        `response "${id}" is no longer kept: qm keeps the ${this.maxEntries} most recently used responses ` +
          `in memory (server.responses_store, server.responses_store_mb) and this one was evicted${this.rows ? " (and is no longer in the database)" : ""}`,
        opts,
      );
    }
    return new QmError(
      "not_found",
      `response "${id}" was not kept: it was sent with store: false, deleted, answered before qm ` +
        `last started${this.rows ? " and then outlived the database's bounds ([store])" : ""}, or never existed${this.maxEntries === 0 ? " (server.responses_store = 0 keeps none)" : ""}`,
      opts,
    );
  }

  /** Into memory only (the database has it, or is about to). */
  private cache(id: string, entry: Omit<Kept, "bytes">): void {
    const bytes =
      JSON.stringify(entry.response).length +
      JSON.stringify(entry.conversation).length +
      JSON.stringify(entry.inputItems).length;
    this.drop(id);
    if (bytes > this.maxBytes) {
      this.forget(id, entry.owner);
      return;
    }
    this.entries.set(id, { ...entry, bytes });
    this.total += bytes;
    for (const [old, kept] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.total <= this.maxBytes) break;
      this.entries.delete(old);
      this.total -= kept.bytes;
      this.forget(old, kept.owner);
    }
  }

  private drop(id: string): void {
    const kept = this.entries.get(id);
    if (!kept) return;
    this.entries.delete(id);
    this.total -= kept.bytes;
  }

  private forget(id: string, owner: string): void {
    this.evicted.set(id, owner);
    if (this.evicted.size > EVICTED_NAMES) {
      const first = this.evicted.keys().next().value;
      if (first !== undefined) this.evicted.delete(first);
    }
  }
}

function mayRead(asker: Asker, owner: string): boolean {
  return asker.admin || asker.name === owner;
}

const stores = new WeakMap<Gateway, ResponseStore>();

/** The gateway's store, made on first use from its config (and its database, if any). */
export function storeOf(gw: Gateway): ResponseStore {
  let s = stores.get(gw);
  if (!s) {
    const { responsesStore, responsesStoreBytes } = gw.config.server;
    s = new ResponseStore(responsesStore, responsesStoreBytes, gw.db?.responses ?? null);
    stores.set(gw, s);
  }
  return s;
}
