/**
 * One finished request for a model, as the exchange saw it: what the activity log keeps, what
 * metrics count and what `/api/events` publishes as `event: request`. No prompt or answer text
 * (with `[activity] capture` the log keeps those beside it: `capture.ts`). Field names are the
 * wire's (`GET /api/requests`).
 */

/** Which API a request came in on. */
export type ApiName = "openai" | "anthropic" | "responses" | "ollama" | "upstream" | "load";

export interface RequestRecord {
  /**
   * The request's number in its gateway (1, 2, …; `GET /api/requests/{id}`), given by the
   * activity log when it keeps the record; 0 before.
   */
  id: number;
  /** Wall-clock epoch ms at which the request came in. */
  time: number;
  /**
   * The name of the key it came with (`[keys.NAME]`; `admin` for `server.api_keys`;
   * `anonymous` when no key is configured), never the key itself.
   */
  key: string;
  model: string;
  /** The peer that served it (`[peers.NAME]`); absent for a local model. */
  peer?: string;
  api: ApiName;
  /** The HTTP status the client got (200 for a stream that failed after its headers went out). */
  status: number;
  /** The upstream answered in full; false when it failed, timed out or the client left. */
  answered: boolean;
  /** How long the request waited for its model (`x-qm-wait-ms`); null if it was never granted. */
  wait_ms: number | null;
  /** The model was not ready when the request came: it waited for a load (a swap). */
  swap: boolean;
  /** From the request's arrival to the end of its answer. */
  duration_ms: number;
  /** Streamed answers: from the request's arrival to the first chunk of the answer. */
  ttft_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  finish_reason: string | null;
}
