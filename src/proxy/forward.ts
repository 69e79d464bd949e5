import { QmError } from "../shared/errors.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Logger } from "../shared/log.ts";
import { sseEvent } from "../shared/sse.ts";
import type { AnswerNames } from "./answer-names.ts";
import { failureLogLine, upstreamFailure } from "./causes.ts";
import type { Deadline } from "./deadline.ts";
import { clientResponseHeaders, upstreamRequestHeaders } from "./headers.ts";
import { ModelRewrite, rewriteWhole } from "./model-rewrite.ts";
import {
  BrokenStream,
  type ChunkObserver,
  type ChunkRewrite,
  type RelayEnd,
  relay,
} from "./relay.ts";
import { SseCheck } from "./sse-check.ts";
import { UsageStrip } from "./usage-strip.ts";

/** What an upstream call carries, whichever API it came in on (the exchange's `Call`). */
export interface UpstreamCall {
  /** Model id, for error messages. */
  readonly modelId: string;
  /** The call's signal and time limits. A `raw` caller drives its body reads itself. */
  readonly deadline: Deadline;
  /** Last lines the upstream printed, read only for qm's log line when something goes wrong. */
  stderrTail(): string[];
  /** Where a failure's raw error and the stderr tail go; clients get a one-line cause. */
  readonly log: Logger | undefined;
  /** Sees each chunk of the answer as it passes (one tee for all that watches answers). */
  readonly observer: ChunkObserver | null;
  /** Told exactly once when the exchange is over, however it ended. */
  ended(end: RelayEnd): void;
  /** Sets qm's own headers on the client's response (`x-qm-model`, …). */
  tag(headers: Headers): void;
  /**
   * Headers qm adds upstream after the client's own credentials were dropped: a peer's key
   * (`src/peers`). Absent or empty for a local model.
   */
  readonly credentials?: readonly (readonly [string, string])[] | undefined;
  /** How the upstream is called; the global `fetch` when absent (tests pass a fake). */
  readonly fetch?: Fetch | undefined;
  /** What each model's server answers with as its name (learnt); absent: always rewrite. */
  readonly answerNames?: AnswerNames | undefined;
  /** Set when the upstream is a peer (`[peers.NAME]`): its redirects fail the call. */
  readonly peer?: { readonly peer: string } | null | undefined;
}

export interface ForwardRequest {
  /** Upstream base URL (no trailing slash) and the path + query to call on it. */
  base: string;
  pathAndQuery: string;
  method: string;
  headers: Headers;
  body: Uint8Array | null;
  call: UpstreamCall;
  /**
   * Check an SSE answer as it passes (`SseCheck`): a broken one ends with an error event
   * rather than looking complete. `requireDone`: it must end with `data: [DONE]`.
   */
  checkSse?: { requireDone: boolean } | undefined;
  /**
   * The model name the client asked for: put into the answer's `"model"` fields (JSON or SSE)
   * in place of the upstream's own name for it (`ModelRewrite`).
   */
  answerModel?: string | undefined;
  /**
   * qm asked the upstream for `stream_options.include_usage` on the client's behalf: cut the
   * usage-only event out of the SSE answer (`UsageStrip`); the record's `AnswerUsage` reads it first.
   */
  stripUsage?: boolean | undefined;
  /** A mid-stream failure as the client's API writes it; default an OpenAI error event. */
  renderFailure?: ((error: QmError) => Uint8Array) | undefined;
  /**
   * Return the upstream's response as it came, body unread: for a caller that consumes the
   * body itself (the Anthropic translator). `call.ended` then fires only if no response came.
   */
  raw?: boolean;
}

/**
 * Sends one request upstream and returns the client's response, whose body is relayed chunk by
 * chunk. Throws a QmError (after calling onEnd) when no response came at all.
 */
export async function forward(req: ForwardRequest): Promise<Response> {
  const { deadline } = req.call;
  let upstream: Response;
  try {
    deadline.start();
    const headers = upstreamRequestHeaders(req.headers);
    for (const [name, value] of req.call.credentials ?? []) headers.set(name, value);
    upstream = await (req.call.fetch ?? fetch)(req.base + req.pathAndQuery, {
      method: req.method,
      headers,
      body: req.body,
      signal: deadline.signal,
      redirect: "manual",
      // Relay bytes as they are; the deadline, not fetch, limits how long a model may think;
      // and a loopback upstream must never be sent through an HTTP proxy from the environment.
      decompress: false,
      timeout: false,
      proxy: false,
    } as RequestInit);
  } catch (error) {
    throw ended(req, error);
  }
  if (req.call.peer && upstream.status >= 300 && upstream.status < 400) {
    // A peer's redirect is never followed (the request and the peer's key would go to another
    // host) nor passed on (the client would follow it there): the call failed, like a peer
    // that failed — a 502 naming it, the peer marked down, a bare name tried elsewhere.
    await upstream.body?.cancel().catch(() => {});
    const peer = req.call.peer.peer;
    const why = `peer "${peer}" answered ${upstream.status}, a redirect; qm does not follow or pass on a peer's redirects`;
    throw ended(req, new QmError("upstream_failed", why));
  }
  deadline.headers();
  if (req.raw) {
    // Whatever the caller does with the body, the clock runs until its first read returns.
    deadline.reading();
    return upstream;
  }
  const headers = clientResponseHeaders(upstream.headers);
  req.call.tag(headers);
  const { call } = req;
  if (!upstream.body) {
    deadline.end(true);
    call.ended(DONE);
    return new Response(null, { status: upstream.status, headers });
  }
  const type = headers.get("content-type") ?? "";
  const sse = type.includes("text/event-stream");
  // The model name goes into plain bytes only: an encoded (compressed) body passes as it is.
  const coding = headers.get("content-encoding");
  const names = call.answerNames;
  const rename =
    req.answerModel !== undefined &&
    upstream.ok &&
    (coding === null || coding === "identity") &&
    !names?.answers(call.modelId, req.answerModel)
      ? req.answerModel
      : undefined;
  const learn =
    names && rename !== undefined
      ? (value: Buffer) => names.learn(call.modelId, value.toString())
      : undefined;
  if (!sse && WHOLE_JSON.test(type)) {
    // A JSON answer is only usable whole, so nothing is gained by relaying it piecemeal; taking
    // it whole is cheaper per request and tells us exactly when the exchange is over.
    let bytes: Uint8Array;
    try {
      bytes = await readWhole(upstream, deadline);
    } catch (error) {
      throw ended(req, error);
    }
    call.observer?.chunk(bytes);
    deadline.end(true);
    call.ended(DONE);
    if (rename !== undefined) {
      const out = rewriteWhole(bytes, rename, learn);
      if (out !== bytes) headers.delete("content-length");
      bytes = out;
    }
    return new Response(bytes, { status: upstream.status, headers });
  }
  const body = relay(upstream.body, {
    observer: call.observer,
    rewrite: sse ? streamRewrite(rename, req.stripUsage === true && upstream.ok, learn) : null,
    watch: deadline,
    check: sse && req.checkSse && upstream.ok ? new SseCheck(req.checkSse.requireDone) : null,
    onEnd: call,
    // An SSE client can be told why its stream ended; any other body is simply cut short.
    onFailure: sse
      ? (error) => (deadline.signal.aborted && !deadline.timedOut ? null : midStream(req, error))
      : undefined,
  });
  return new Response(body, { status: upstream.status, headers });
}

/** What changes an SSE answer's bytes on their way: the model's name, the usage event. */
function streamRewrite(
  rename: string | undefined,
  stripUsage: boolean,
  learn: ((value: Buffer) => void) | undefined,
): ChunkRewrite | null {
  const named = rename !== undefined ? new ModelRewrite(rename, learn) : null;
  if (!stripUsage) return named;
  const strip = new UsageStrip();
  if (named === null) return strip;
  return {
    feed: (chunk) => named.feed(strip.feed(chunk)),
    end: () => {
      const held = strip.end();
      const out = held ? named.feed(held) : null;
      const rest = named.end();
      if (out && rest) return Buffer.concat([out, rest]);
      return rest ?? (out && out.length > 0 ? out : null);
    },
  };
}

/**
 * `application/json` or a `+json` type (RFC 6839): one document, usable only whole. Not
 * `application/x-ndjson` and the like, which stream line by line and are relayed as they come.
 */
const WHOLE_JSON = /^\s*application\/(?:json|[\w.+-]*\+json)\s*(?:;|$)/i;

/**
 * The whole body, in one native read (a JS reader loop costs several times more per request).
 * The read is timed as one: the body must be complete within `stall_timeout_s` of the headers
 * — a JSON answer arrives whole once the model is done, so that is ample — and the deadline
 * aborts it otherwise.
 */
async function readWhole(res: Response, deadline: Deadline): Promise<Uint8Array> {
  deadline.reading();
  try {
    return await res.bytes();
  } finally {
    deadline.read();
  }
}

/** Reports the end of an exchange that produced no response, and the error to answer with. */
function ended(req: ForwardRequest, error: unknown): QmError {
  const { deadline, modelId } = req.call;
  const cancelled = deadline.signal.aborted && !deadline.timedOut;
  deadline.end(false);
  req.call.ended(cancelled ? CANCELLED : { kind: "failed", error });
  if (cancelled) {
    return new QmError("cancelled", `the client went away while "${modelId}" was answering`);
  }
  return asFailure(req, error, false);
}

const DONE: RelayEnd = { kind: "done" };
const CANCELLED: RelayEnd = { kind: "cancelled" };

/** The QmError a client is shown: a timeout as it is, anything else as one plain cause. */
function asFailure(req: ForwardRequest, error: unknown, midAnswer: boolean): QmError {
  const { call } = req;
  const timeout = call.deadline.timedOut;
  if (timeout) return timeout;
  if (error instanceof QmError) return error;
  if (error instanceof BrokenStream) {
    const message = `model "${call.modelId}" ${error.message}`;
    call.log?.warn(message);
    return new QmError("upstream_failed", message);
  }
  call.log?.warn(failureLogLine(call.modelId, error, call.stderrTail()));
  return new QmError("upstream_failed", upstreamFailure(call.modelId, error, midAnswer), {
    cause: error,
  });
}

/**
 * The event that ends a stream broken mid-way. The body may have stopped mid-line; a blank line
 * first ends whatever was half sent, so the error is an event of its own (blank lines between
 * events are no-ops for every SSE parser).
 */
function midStream(req: ForwardRequest, error: unknown): Uint8Array {
  const failure = asFailure(req, error, true);
  const frame =
    req.renderFailure?.(failure) ?? sseError(failure.message, "upstream_error", failure.code);
  return Buffer.concat([BLANK_LINES, frame]);
}

const BLANK_LINES = Buffer.from("\n\n");

const encoder = new TextEncoder();

/** An OpenAI-style error event; the OpenAI SDKs raise it as an API error. */
export function sseError(
  message: string,
  type = "upstream_error",
  code = "upstream_failed",
): Uint8Array {
  const payload = JSON.stringify({ error: { message, type, param: null, code } });
  return encoder.encode(sseEvent(payload));
}
