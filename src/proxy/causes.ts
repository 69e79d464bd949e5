/**
 * What a client is told when its upstream could not be reached or broke off: the model and one
 * short, plain cause. Bun's fetch errors carry a `code` and a message written for developers
 * ("… pass `verbose: true` in the second argument to fetch()"); that message, like the model's
 * stderr, is for qm's own log (and `/api/models/{id}/logs`), never for a client.
 */
import { QmError } from "../shared/errors.ts";

const REFUSED = "connection refused";
const RESET = "connection reset";
const CLOSED = "the upstream closed the connection";
const TIMED_OUT = "timed out";

/** By `code` (Bun and Node spellings) or, for DOMExceptions, by `name`. */
const CAUSES: Record<string, string> = {
  ECONNREFUSED: REFUSED,
  ConnectionRefused: REFUSED,
  ECONNRESET: RESET,
  EPIPE: RESET,
  ECONNABORTED: RESET,
  ConnectionClosed: CLOSED,
  UND_ERR_SOCKET: CLOSED,
  ERR_STREAM_PREMATURE_CLOSE: CLOSED,
  ETIMEDOUT: TIMED_OUT,
  Timeout: TIMED_OUT,
  TimeoutError: TIMED_OUT,
  ENOTFOUND: "host not found",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  FailedToOpenSocket: "cannot open a connection",
};

/** A one-line cause for an upstream call that failed; never the error's own message. */
export function failureCause(error: unknown): string {
  if (typeof error === "object" && error !== null) {
    const { code, name } = error as { code?: unknown; name?: unknown };
    const known =
      (typeof code === "string" && CAUSES[code]) || (typeof name === "string" && CAUSES[name]);
    if (known) return known;
  }
  return "the connection failed";
}

/**
 * `model "m" failed to answer: connection refused` (before the response) or `… failed
 * mid-answer: …` (after). A QmError (a timeout) already says it in qm's words.
 */
export function upstreamFailure(model: string, error: unknown, midAnswer = false): string {
  if (error instanceof QmError) return error.message;
  return `model "${model}" failed ${midAnswer ? "mid-answer" : "to answer"}: ${failureCause(error)}`;
}

/** qm's own log line for the same failure: the raw error and the model's last output. */
export function failureLogLine(model: string, error: unknown, tail: readonly string[]): string {
  const raw = error instanceof Error ? error.message : String(error);
  const lines = tail.length ? `; last output:\n${tail.join("\n")}` : "";
  return `model "${model}": upstream call failed: ${raw}${lines}`;
}
