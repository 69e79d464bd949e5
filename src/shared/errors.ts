/**
 * One error type for everything a request can end in. Each API renders it in its own
 * envelope at the edge (OpenAI `{"error":{…}}`, Anthropic `{"type":"error",…}`).
 * Messages are for people: they name the model and, where it helps, the command to run.
 */
export type QmErrorCode =
  | "bad_request"
  | "unauthorized"
  | "forbidden"
  | "conflict"
  | "request_timeout"
  | "uri_too_long"
  | "queue_full"
  | "rate_limited"
  | "model_not_found"
  | "not_found"
  | "method_not_allowed"
  | "payload_too_large"
  | "upstream_failed"
  | "upstream_crashed"
  | "upstream_start_failed"
  | "upstream_start_timeout"
  | "port_in_use"
  | "upstream_timeout"
  | "model_unloaded"
  | "shutting_down"
  | "cannot_fit"
  | "cancelled"
  | "internal";

const STATUS: Record<QmErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  conflict: 409,
  request_timeout: 408,
  uri_too_long: 414,
  queue_full: 503,
  // A key's own limit (`rpm`, `tokens_per_min`); the scheduler itself never refuses with it.
  rate_limited: 429,
  model_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  upstream_failed: 502,
  upstream_crashed: 502,
  upstream_start_failed: 502,
  upstream_start_timeout: 504,
  // Another process holds the model's port: qm will not send it the model's prompts.
  port_in_use: 503,
  upstream_timeout: 504,
  model_unloaded: 503,
  shutting_down: 503,
  cannot_fit: 503,
  cancelled: 499,
  internal: 500,
};

/**
 * A model process's exit as data, so an API layer can render it without parsing the message.
 * `stderrTail` is like `detail`: for qm's log, never a client (it can carry paths and prompts).
 */
export interface ModelExit {
  model: string;
  /** Exit code, or null when a signal ended it. */
  code: number | null;
  /** Signal name (e.g. "SIGKILL"), or null when it exited by itself. */
  signal: string | null;
  /** Its last stderr lines, oldest first. */
  stderrTail: string[];
}

export class QmError extends Error {
  readonly code: QmErrorCode;
  readonly status: number;
  /** The request field at fault, when there is one (OpenAI's `param`). */
  readonly param: string | null;
  /** Seconds a client should wait before trying again (`Retry-After`), when that helps. */
  readonly retryAfterS: number | null;
  /**
   * For qm's log only, never a client: the command line, the model's last output. They can
   * carry paths, tokens and prompts; `/api/models/{id}/logs` (behind the key) has them.
   */
  readonly detail: string | null;
  /** Set when the error reports a model process's exit (while loading or while serving). */
  readonly exit: ModelExit | null;

  constructor(
    code: QmErrorCode,
    message: string,
    opts: {
      cause?: unknown;
      param?: string;
      retryAfterS?: number;
      detail?: string;
      exit?: ModelExit;
    } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "QmError";
    this.code = code;
    this.status = STATUS[code];
    this.param = opts.param ?? null;
    this.retryAfterS = opts.retryAfterS ?? null;
    this.detail = opts.detail ?? null;
    this.exit = opts.exit ?? null;
  }
}

/**
 * A 4xx that will fail the same way however often it is sent. Clients that retry on their own
 * (Claude Code retries even a 401 for minutes, printing nothing) read `x-should-retry: false`.
 * 408, 409 and 429 are left out: waiting can change their answer.
 */
export function isFinalStatus(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 409 && status !== 429;
}

export function asQmError(err: unknown): QmError {
  if (err instanceof QmError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new QmError("internal", message, { cause: err });
}
