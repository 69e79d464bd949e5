/**
 * Stored Responses (`store`), each with its owner key, for `previous_response_id`, `GET` and
 * `DELETE /v1/responses/{id}` and `input_items` after a restart. The in-memory LRU of
 * `src/api/responses/store.ts` answers first; this is where it is refilled from. Writes are
 * queued (`batch.ts`); an entry queued and not yet written is found here all the same.
 */
import type { Database } from "bun:sqlite";
import type { Batch } from "./batch.ts";

type Obj = Record<string, unknown>;

export interface StoredResponse {
  /** The name of the key that made it. */
  owner: string;
  response: Obj;
  /** The chat messages a next turn replays. */
  conversation: object[];
  inputItems: Obj[];
}

export class ResponseRows {
  /** Queued and not yet written: id → entry (null: a delete). */
  private readonly queued = new Map<string, StoredResponse | null>();

  constructor(
    private readonly db: Database,
    private readonly batch: Batch,
    private readonly now: () => number,
  ) {}

  get(id: string): StoredResponse | null {
    const queued = this.queued.get(id);
    if (queued !== undefined) return queued;
    if (this.batch.failed !== null) return null;
    const row = this.db
      .query<{ owner: string; body: string }, [string]>(
        "SELECT owner, body FROM responses WHERE id = ?",
      )
      .get(id);
    if (!row) return null;
    const body = JSON.parse(row.body) as Omit<StoredResponse, "owner">;
    return { owner: row.owner, ...body };
  }

  put(id: string, entry: StoredResponse): void {
    this.queued.set(id, entry);
    const created = this.now();
    this.batch.add(() => {
      if (this.queued.get(id) !== entry) return 0; // replaced or deleted since
      this.queued.delete(id);
      const body = JSON.stringify({
        response: entry.response,
        conversation: entry.conversation,
        inputItems: entry.inputItems,
      });
      this.db
        .query(
          "INSERT OR REPLACE INTO responses (id, owner, created_ms, bytes, body) VALUES (?, ?, ?, ?, ?)",
        )
        .run(id, entry.owner, created, body.length, body);
      return id.length + entry.owner.length + body.length;
    });
  }

  delete(id: string): void {
    this.queued.set(id, null);
    this.batch.add(() => {
      if (this.queued.get(id) !== null) return 0;
      this.queued.delete(id);
      this.db.query("DELETE FROM responses WHERE id = ?").run(id);
      return 0;
    });
  }
}
