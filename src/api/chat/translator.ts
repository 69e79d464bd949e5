/**
 * What a streaming translator is: the upstream's chat stream in, as steps (`chunk.ts`), one
 * API's stream out, as text the body writes as it is. Anthropic (`event:`-named SSE events),
 * Responses (`response.*` SSE events) and Ollama (NDJSON lines) each implement it; none reads
 * bytes, frames SSE or parses JSON — `translated-body.ts` does that for all three.
 */
import type { QmError } from "../../shared/errors.ts";
import type { ChatStep } from "./chunk.ts";
import { type Refusal, refusalMessage } from "./refusal.ts";

/** Why an answer failed after the client's `200` went out, for the API to say in its words. */
export type StreamFailure =
  /** qm's own failure: the request could not be sent, or a time limit passed (a 504). */
  | { kind: "qm"; error: QmError }
  /** The answer broke off: a read of the body failed, or one event was too big to hold. */
  | { kind: "broken"; message: string }
  /** The upstream (model `model`) refused with an error status once the `200` was out. */
  | { kind: "refusal"; refusal: Refusal; model: string };

/** A failure in plain words, for the APIs that give only a message (Responses, Ollama). */
export function failureMessage(f: StreamFailure): string {
  if (f.kind === "qm") return f.error.message;
  if (f.kind === "broken") return f.message;
  return refusalMessage(f.model, f.refusal);
}

export interface ChatTranslator {
  /** What goes out as soon as the client reads ("" for nothing yet). */
  start(): string;
  /** One step of the upstream's stream. */
  step(s: ChatStep): string;
  /** What keeps the connection alive while nothing else went out for a while ("" for nothing). */
  keepAlive(): string;
  /** The answer failed: the API's error, unless the stream is already over. */
  fail(f: StreamFailure): string;
  /** The upstream's body ended: the answer's end, or its error when it never finished. */
  end(): string;
  /** Nothing more goes out (the answer ended, or failed). */
  readonly finished: boolean;
  /**
   * Once `finished`, what still has to go out after some I/O (the Anthropic stream's end after a
   * stop sequence, whose usage counts the delivered text with the upstream's tokenizer); null
   * when nothing. The body stops reading the upstream first, then writes what it gives.
   */
  settle?(): Promise<string> | null;
  /** The answer ended in tool calls (the agent-loop hold). */
  readonly toolCalls: boolean;
  /** The answer completed as the model meant it to (not failed, not cut). */
  readonly answered: boolean;
  /**
   * An upstream's `: qm-status` comment (a qm peer loading the model) is relayed among the
   * events: true for the SSE APIs, false for NDJSON, which has no comment line.
   */
  readonly relaysStatus: boolean;
}
