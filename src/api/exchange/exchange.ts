/**
 * One exchange for every proxied request, whichever API it came in on: admission (shutdown,
 * scheduling headers) → the model's `x-qm-*` headers → the wait-status placeholder for a cold
 * streaming request → acquire (the client's leaving cancels the wait) → the API's own send →
 * the end, which releases the lease exactly once (`Call.finish`). What differs per API is
 * passed in: the parsed request, how to send it and render its answer (`send`), and the error
 * envelope (`api`). See design.md beside this file.
 */
import type { ModelConfig, PeerTarget } from "../../config/types.ts";
import { KeyTable } from "../../keys/table.ts";
import type { ApiName } from "../../observe/record.ts";
import { placeholderStream } from "../../proxy/wait-status.ts";
import { asQmError, QmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import { keyOf } from "../edge/caller.ts";
import { noIdleTimeout } from "../edge/idle.ts";
import type { AcquireHooks, InferenceGateway } from "../gateway.ts";
import { schedulingHeaders } from "../request/scheduling.ts";
import { Call } from "./call.ts";
import { conversationKey } from "./conversation.ts";
import type { Observer } from "./observer.ts";
import { carriesToolResult, toolResultIn } from "./tool-result.ts";

/**
 * What one request asks of the scheduler besides its model: its hold (`X-QM-Hold-Ms`), its
 * patience (`X-QM-Patience-Ms`), Ollama's `keep_alive`, the conversation it belongs to, and
 * whether it carries a tool result (the evidence of an agent loop).
 */
export type SchedulingOptions = Pick<
  AcquireHooks,
  "holdMs" | "patienceMs" | "keepAliveMs" | "conversation" | "toolResult" | "key"
>;

/** How an API writes failures. */
export interface ExchangeApi {
  /** The API's name in the request's record (`/api/requests`, metrics' `api` label). */
  readonly name: ApiName;
  /** A failure before any answer: the API's error envelope, with the exchange's headers. */
  error(err: QmError, headers: Headers): Response;
  /** A failure inside a stream that already answered 200; the placeholder's default if absent. */
  streamError?: ((err: unknown) => Uint8Array) | undefined;
}

export interface Exchange<T> {
  gw: InferenceGateway;
  request: Request;
  model: ModelConfig;
  scheduling: SchedulingOptions;
  /**
   * The API's own response headers (`Call.tag` adds `x-qm-model`, `-loaded`, `-wait-ms`); null
   * or absent when it has none, so a passthrough answer builds no set it never uses
   * (`headersOf`).
   */
  headers?: Headers | null | undefined;
  api: ExchangeApi;
  log: Logger;
  /** The request is a stream whose answer may wait behind the wait-status placeholder. */
  placeholder?: boolean | undefined;
  /** The tee on the answer, when something needs to watch it. */
  observer?: Observer | null | undefined;
  /** Only the first-byte limit applies (see `CallOptions.mayIdle`). */
  mayIdle?: boolean | undefined;
  /**
   * False when the API knows the request offers no tools: it cannot be a turn of an agent loop,
   * so its conversation (which the hold policy follows) is not worked out. Absent: it is.
   */
  offersTools?: boolean | undefined;
  /** What the API parsed from the request. */
  parsed: T;
  /**
   * The request's JSON body as the API parsed it: whether it carries a tool result is read
   * from it (`toolResultIn`) rather than searched for in the bytes. Absent: the bytes are.
   */
  json?: Readonly<Record<string, unknown>> | undefined;
  /** The request body as the client sent it, for a capture (`[activity] capture`). */
  body?: Uint8Array | null | undefined;
  /**
   * Sends the request to the granted model and resolves with the client's response. It ends
   * `call` (`call.finish`) when the answer is over; when it throws, the exchange ends it.
   */
  send(x: Exchange<T>, call: Call): Promise<Response>;
  /**
   * Set by the exchange once the placeholder's 200 went out: the answer can only be a stream
   * from then on.
   */
  committed?: boolean | undefined;
}

/**
 * Admission: refused during shutdown; `X-QM-Hold-Ms` / `X-QM-Patience-Ms` read and checked;
 * the request's key counted against its `rpm` and `tokens_per_min` (429 past them).
 */
export function admit(gw: InferenceGateway, request: Request): SchedulingOptions {
  if (gw.shuttingDown) throw new QmError("shutting_down", "qm is shutting down");
  const asks: SchedulingOptions = schedulingHeaders(request.headers);
  const key = keyOf(request);
  if (key.rpm > 0 || key.tokensPerMin > 0) {
    const refused = KeyTable.of(gw.config).limits.admit(key.name, key, performance.now());
    if (refused) {
      throw new QmError("rate_limited", refused.message, { retryAfterS: refused.retryAfterS });
    }
  }
  asks.key = key;
  return asks;
}

/** The exchange's response headers, made on first use. */
export function headersOf<T>(x: Exchange<T>): Headers {
  x.headers ??= new Headers();
  return x.headers;
}

/** Runs one exchange to its response; always returns a Response. */
export async function runExchange<T>(x: Exchange<T>): Promise<Response> {
  const { gw, model } = x;
  // A model load can take minutes: Bun's idle timeout must not close the connection meanwhile.
  noIdleTimeout(x.request);
  if (model.peer) return runPeer(x, model.peer);
  const call = new Call(gw, model, x.request.signal, x.log, x);
  call.loaded = gw.modelState(model.id) === "ready";
  if (x.offersTools !== false) {
    x.scheduling.conversation ??= conversationKey(x.request.headers, x.body);
    x.scheduling.toolResult ??= x.json ? toolResultIn(x.json) : carriesToolResult(x.body);
  } else {
    // Offering no tools, it is no agent's turn: its body is not searched (a plain chat pays
    // nothing for the evidence of a loop).
    x.scheduling.toolResult ??= false;
  }
  if (x.placeholder && !call.loaded && model.sendLoadingState) {
    const placeholder = waitStatus(x, call);
    return call.capture ? call.capture.tee(placeholder) : placeholder;
  }
  let res: Response;
  try {
    call.granted(await gw.acquire(model, call.signal, x.scheduling));
    res = await x.send(x, call);
  } catch (err) {
    call.finish(false);
    const headers = headersOf(x);
    call.tag(headers);
    res = x.api.error(asQmError(err), headers);
  }
  call.responded(res.status, res.body !== null && isStream(res.headers.get("content-type")));
  return call.capture ? call.capture.tee(res) : res;
}

/**
 * A peer's model: no grant and no placeholder (a qm peer sends its own wait comments, relayed
 * as they come). A peer that fails before any byte of an answer (refused, timed out, 5xx) is
 * marked down and, for a bare name, the next peer that serves the model is tried; once an
 * answer has started it is the client's, whatever happens next. See src/peers/design.md.
 */
async function runPeer<T>(x: Exchange<T>, first: PeerTarget): Promise<Response> {
  const peers = x.gw.peers;
  const requested = x.model.id;
  if (x.request.headers.has(FORWARDED)) {
    // One hop only: boxes that are each other's peers must never pass a request round.
    const err = new QmError(
      "model_not_found",
      `model "${requested}" is not on this box, and a request another box forwarded is not forwarded again`,
      { param: "model" },
    );
    return x.api.error(err, headersOf(x));
  }
  const explicit = requested !== first.remote;
  const tried = new Set<string>();
  let target = first;
  for (;;) {
    tried.add(target.peer);
    const call = new Call(x.gw, x.model, x.request.signal, x.log, x);
    call.viaPeer(target);
    let res: Response | null = null;
    let failure: QmError | null = null;
    const admitted = peers ? peers.begin(target.peer) : "pass";
    const refused = admitted === "no";
    if (refused) {
      call.finish(false);
      failure = new QmError("upstream_failed", `peer "${target.peer}" is down`);
    } else {
      try {
        res = await x.send(x, call);
      } catch (err) {
        call.finish(false);
        failure = asQmError(err);
      }
    }
    const down = failure ? peerFault(failure) : res!.status >= 500;
    const cause = failure?.message ?? `answered ${res?.status}`;
    // A call the breaker held back never reached the peer: it says nothing of its health; nor
    // does one the client left (a trial call's is given back for the next).
    if (!refused && (res || down)) {
      peers?.report(target.peer, down ? { ok: false, error: cause } : { ok: true });
    } else if (admitted === "trial") {
      peers?.abandon(target.peer);
    }
    const next =
      down && !explicit && !x.request.signal.aborted ? nextPeer(x, requested, tried) : null;
    if (next) {
      // The failed answer is dropped unread: its end releases what it held.
      await res?.body?.cancel().catch(() => {});
      call.finish(false);
      x.model = next;
      target = next.peer!;
      continue;
    }
    if (res) {
      call.responded(res.status, res.body !== null && isStream(res.headers.get("content-type")));
      return call.capture ? call.capture.tee(res) : res;
    }
    const headers = headersOf(x);
    call.tag(headers);
    const named = failure!.message.includes(`peer "${target.peer}"`)
      ? failure!
      : new QmError(failure!.code, `peer "${target.peer}": ${failure!.message}`, {
          cause: failure,
        });
    const out = x.api.error(named, headers);
    call.responded(out.status, false);
    return call.capture ? call.capture.tee(out) : out;
  }
}

/** Set on every request sent to a peer (`peerRequestHeaders`): it serves it locally or not at all. */
const FORWARDED = "x-qm-forwarded";

/** A failure that is the peer's (it could not be reached, or gave no answer in time). */
function peerFault(err: QmError): boolean {
  return err.status >= 500 && err.code !== "shutting_down" && err.code !== "internal";
}

/** The next box for a bare name after `tried` failed: another peer that serves it. */
function nextPeer<T>(x: Exchange<T>, name: string, tried: ReadonlySet<string>) {
  try {
    return x.gw.peers?.resolve(name, tried) ?? null;
  } catch {
    return null;
  }
}

/** An answer whose body is a stream of events or lines (SSE, NDJSON), not one document. */
function isStream(type: string | null): boolean {
  return type !== null && (type.includes("event-stream") || type.includes("ndjson"));
}

/**
 * A cold streaming request: `200 text/event-stream` at once, `: qm-status` comments while the
 * model loads, then the answer. The client stopping early cancels the wait and the call.
 */
function waitStatus<T>(x: Exchange<T>, call: Call): Response {
  x.committed = true;
  const { gw, model, scheduling } = x;
  const body = placeholderStream({
    model: model.id,
    start: async (progress) => {
      try {
        const lease = await gw.acquire(model, call.signal, {
          onPosition: progress.onPosition,
          onLoading: progress.onLoading,
          holdMs: scheduling.holdMs,
          patienceMs: scheduling.patienceMs,
          keepAliveMs: scheduling.keepAliveMs,
          conversation: scheduling.conversation,
          toolResult: scheduling.toolResult,
          key: scheduling.key,
        });
        call.granted(lease);
        return await x.send(x, call);
      } catch (err) {
        call.finish(false);
        throw err;
      }
    },
    onCancel: () => call.cancel(),
    loadProgress: () => gw.loadProgress(model.id),
    renderError: x.api.streamError,
  });
  const headers = headersOf(x);
  call.tag(headers);
  headers.set("content-type", "text/event-stream");
  headers.set("cache-control", "no-cache");
  call.responded(200, true);
  return new Response(body, { status: 200, headers });
}
