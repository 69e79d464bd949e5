/**
 * One read of an upstream's body by a translating route (Anthropic, Responses, Ollama), timed
 * by the call's deadline: the next chunk, the end, or why it failed in qm's words. A timeout is
 * the deadline's own `QmError`; any other failure is logged (raw, for qm's log) and described
 * without the runtime's text. A failure after the client left (`left()`) is no failure of the
 * upstream's: it is neither logged nor described.
 */
import { upstreamFailure } from "../../proxy/causes.ts";
import type { ReadWatch } from "../../proxy/deadline.ts";
import { QmError } from "../../shared/errors.ts";

export type UpstreamStep =
  | { kind: "chunk"; value: Uint8Array }
  | { kind: "done" }
  /** `timeout`: the deadline's error (a time limit), else the connection broke mid-answer. */
  | { kind: "failed"; message: string; timeout: QmError | null }
  | { kind: "left" };

export interface UpstreamRead {
  model: string;
  deadline?: ReadWatch | null | undefined;
  logFailure?: ((error: unknown) => void) | undefined;
}

export async function readUpstream(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  o: UpstreamRead,
  left: () => boolean,
): Promise<UpstreamStep> {
  try {
    o.deadline?.reading();
    const step = await reader.read();
    o.deadline?.read();
    return step.done ? { kind: "done" } : { kind: "chunk", value: step.value };
  } catch (error) {
    if (left()) return { kind: "left" };
    if (error instanceof QmError) return { kind: "failed", message: error.message, timeout: error };
    o.logFailure?.(error);
    return { kind: "failed", message: upstreamFailure(o.model, error, true), timeout: null };
  }
}
