/**
 * One error type for everything a request can end in. Each API renders it in its own
 * envelope at the edge (OpenAI `{"error":{…}}`, Anthropic `{"type":"error",…}`).
 * Messages are for people: they name the model and, where it helps, the command to run.
 */
export type QmErrorCode =
  | "bad_request"
  | "unauthorized"
  | "model_not_found"
  | "not_found"
  | "method_not_allowed"
  | "payload_too_large"
  | "upstream_failed"
  | "upstream_crashed"
  | "upstream_start_failed"
  | "upstream_start_timeout"
  | "upstream_timeout"
  | "model_unloaded"
  | "shutting_down"
  | "cannot_fit"
  | "cancelled"
  | "internal";

const STATUS: Record<QmErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  model_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  upstream_failed: 502,
  upstream_crashed: 502,
  upstream_start_failed: 502,
  upstream_start_timeout: 504,
  upstream_timeout: 504,
  model_unloaded: 503,
  shutting_down: 503,
  cannot_fit: 503,
  cancelled: 499,
  internal: 500,
};

export class QmError extends Error {
  readonly code: QmErrorCode;
  readonly status: number;
  /** The request field at fault, when there is one (OpenAI's `param`). */
  readonly param: string | null;

  constructor(code: QmErrorCode, message: string, opts: { cause?: unknown; param?: string } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "QmError";
    this.code = code;
    this.status = STATUS[code];
    this.param = opts.param ?? null;
  }
}

export function asQmError(err: unknown): QmError {
  if (err instanceof QmError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new QmError("internal", message, { cause: err });
}
