/**
 * The call to the upstream's chat API and the translated stream of its answer, on a `Call`
 * (`../exchange/`), the same for every API that translates to the chat API.
 */
import { failureLogLine } from "../../proxy/causes.ts";
import { forward } from "../../proxy/forward.ts";
import type { Timers } from "../../shared/timer.ts";
import type { Call } from "../exchange/call.ts";
import { translatedStream } from "./translated-body.ts";
import type { ChatTranslator } from "./translator.ts";

const encoder = new TextEncoder();

/**
 * Sends `payload` to the upstream's `path` (`/v1/chat/completions`, or `/v1/completions` for
 * a raw prompt). The body is read by the caller, which parses it, so it must come plain.
 */
export function sendChat(
  call: Call,
  path: string,
  payload: unknown,
  stream: boolean,
): Promise<Response> {
  return forward({
    base: call.base,
    pathAndQuery: path,
    method: "POST",
    // A fresh set: no client header (anthropic-version, x-stainless-*, …) means anything to
    // an OpenAI server.
    headers: new Headers({
      "content-type": "application/json",
      accept: stream ? "text/event-stream" : "application/json",
      // forward() relays bodies still encoded; this one is parsed, so it must be plain.
      "accept-encoding": "identity",
    }),
    body: encoder.encode(JSON.stringify(payload)),
    call,
    // The translator reads the upstream's body itself.
    raw: true,
  });
}

export interface StreamOptions {
  /** The keep-alive period (none when absent: NDJSON has no keep-alive). */
  pingMs?: number | undefined;
  timers?: Timers | undefined;
  /** Told when the stream is over, before the call ends (e.g. to keep the answer). */
  onEnd?: (() => void) | undefined;
}

/**
 * The translated stream of `call`'s answer: its time limits, its record's usage, its log,
 * and its end — the observer told whether it ended in tool calls, then the call finished once.
 */
export function streamFor(
  call: Call,
  translator: ChatTranslator,
  upstream: Response | Promise<Response>,
  o: StreamOptions = {},
): ReadableStream<Uint8Array> {
  return translatedStream({
    upstream,
    translator,
    model: call.modelId,
    pingMs: o.pingMs,
    timers: o.timers,
    deadline: call.deadline,
    usage: call.observer.usage,
    logFailure: (error) =>
      call.log.warn(
        `key ${call.key.name}: ${failureLogLine(call.modelId, error, call.stderrTail())}`,
      ),
    onEnd: (answered, toolCalls) => {
      o.onEnd?.();
      call.observer.ended(toolCalls);
      call.finish(answered);
    },
    onCancel: () => call.cancel(),
  });
}
