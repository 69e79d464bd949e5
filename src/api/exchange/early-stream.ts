/**
 * The start of a translated stream (Anthropic, Responses): wait up to `pingMs` for the
 * upstream's headers before committing to `200 text/event-stream`, so a quick refusal (context
 * overflow, bad grammar) stays an HTTP error in the API's envelope, while a slow start
 * (llama-server holds its headers through prefill) gets its 200 and the stream's keep-alives.
 * Behind the wait-status placeholder the 200 went out long ago: only the stream's body is made.
 */
import { SSE_HEADERS } from "../../shared/sse.ts";
import { realTimers, settleWithin, type Timers } from "../../shared/timer.ts";
import type { Call } from "./call.ts";
import { type Exchange, headersOf } from "./exchange.ts";

export interface EarlyStream {
  /** Sends the request upstream; its body is read by `body`. */
  open(): Promise<Response>;
  pingMs: number;
  timers?: Timers | undefined;
  /** The translated stream, from the upstream's response (or the promise of it). */
  body(upstream: Response | Promise<Response>): ReadableStream<Uint8Array>;
  /** A refusal within `pingMs`, in the API's envelope (`text`: the upstream's body). */
  refusal(res: Response, text: string, headers: Headers): Response;
}

export async function earlyStream<T>(
  x: Exchange<T>,
  call: Call,
  o: EarlyStream,
): Promise<Response> {
  if (x.committed) return new Response(o.body(o.open()));
  const pending = o.open();
  const early = await settleWithin(pending, o.pingMs, o.timers ?? realTimers);
  if (early && !early.ok) throw early.error;
  const headers = headersOf(x);
  if (early && early.res.status !== 200) {
    const text = await early.res.text().catch(() => "");
    // The refusal is the whole exchange (an answer, if not a welcome one).
    call.finish(true);
    return o.refusal(early.res, text, headers);
  }
  for (const [k, v] of Object.entries(SSE_HEADERS)) headers.set(k, v);
  return new Response(o.body(early ? early.res : pending), { status: 200, headers });
}
