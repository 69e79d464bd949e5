/**
 * The thin stream around the pure translator: reads the upstream's SSE bytes (`SseEvents` frames
 * them per the WHATWG SSE spec; a huge data line goes through `DeltaScanner` as it comes),
 * feeds each event to the `StreamTranslator`, and hands its Anthropic events on as the client
 * asks for them. An upstream `: qm-status` comment (a qm peer loading the model) is relayed as
 * the same comment, in order with the events (`relayedComment`); other comments are dropped.
 *
 * It also writes `ping` events while nothing else has gone out for `pingMs`: prefill of a long
 * prompt on a local GPU can take minutes, and llama-server holds even its response headers
 * until the first token, so the upstream may be a pending promise when the stream starts.
 * Anthropic sends the same keep-alive (`event: ping`, streaming docs).
 */
import type { ReadWatch } from "../../proxy/deadline.ts";
import { asQmError } from "../../shared/errors.ts";
import { relayedComment } from "../../shared/sse.ts";
import { realTimers, type Timers } from "../../shared/timer.ts";
import { DeltaScanner } from "../chat/delta-scan.ts";
import { SseEvents } from "../chat/sse-events.ts";
import { readUpstream } from "../exchange/read-upstream.ts";
import { fromQmError, fromUpstream } from "./errors.ts";
import type { StreamTranslator } from "./translate/stream.ts";

/**
 * A data line still unfinished past this many bytes is translated as it arrives rather than
 * held whole (`DeltaScanner`); below it, lines are parsed whole, which is cheaper.
 */
export const BIG_LINE_BYTES = 256 * 1024;

export interface TranslatedStreamOptions {
  /** The upstream's response, or the promise of it (rejecting with a QmError). */
  upstream: Response | Promise<Response>;
  translator: StreamTranslator;
  /** Model id, for error messages. */
  model: string;
  pingMs: number;
  /** The call's time limits: each read of the upstream's body is timed (pings never count). */
  deadline?: ReadWatch | null;
  /** The clock of the ping timer; real time unless a test moves a fake one. */
  timers?: Timers | undefined;
  /** Told the raw error of a body read that failed (for qm's log; the client gets a cause). */
  logFailure?: (error: unknown) => void;
  /**
   * Called exactly once when the stream is over: `answered` when the upstream answered in full
   * (a refusal counts), `toolCalls` when it ended in tool use.
   */
  onEnd: (answered: boolean, toolCalls: boolean) => void;
  /** The client went away: stop the upstream. */
  onCancel: () => void;
  /** `BIG_LINE_BYTES` unless a test asks for less. */
  bigLineBytes?: number;
}

/**
 * Bun's "direct" stream: the translator's output for each upstream chunk is one string write
 * and one flush, straight to the socket. Pings are written by their timer directly (writes are
 * whole events, and JS runs one callback at a time), so reading the upstream needs no race
 * against a wake-up per chunk.
 */
export function translatedStream(o: TranslatedStreamOptions): ReadableStream<Uint8Array> {
  const t = o.translator;
  const timers = o.timers ?? realTimers;
  let out: ReadableStreamDirectController | null = null;
  let early = "";
  let lastWrite = timers.now();
  let ended = false;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  /** The upstream answered in full (a refusal counts): the end is no stall. */
  let answered = false;

  /** Writes now when the client is attached; before that (a ping), keeps it for the start. */
  const write = (text: string): number | Promise<number> => {
    if (text === "" || ended) return 0;
    if (!out) {
      early += text;
      return 0;
    }
    lastWrite = timers.now();
    const wrote = out.write(text);
    const flushed = out.flush();
    return typeof wrote !== "number" ? wrote : flushed;
  };
  let pending = "";
  const events = new SseEvents({
    onEvent: (data, name) => {
      pending += t.event(data, name);
    },
    // A qm peer's wait status (`: qm-status: loading 42%`) reaches the client as it came, in
    // its place among the events; other comments stay dropped.
    onComment: (text) => {
      pending += relayedComment(text);
    },
    bigLineBytes: o.bigLineBytes ?? BIG_LINE_BYTES,
    bigLine: () =>
      new DeltaScanner((kind, escaped) => {
        pending += t.escapedDelta(kind, escaped);
      }),
  });
  // One timer, re-armed for when the stream will have been quiet for `pingMs`: writes only
  // note the time, so a token stream costs no timer churn, and no gap exceeds `pingMs`.
  let timer: unknown;
  const arm = (ms: number) => {
    timer = timers.set(() => {
      if (ended) return;
      const quiet = timers.now() - lastWrite;
      if (quiet >= o.pingMs) {
        void write(t.ping());
        arm(o.pingMs);
      } else {
        arm(o.pingMs - quiet);
      }
    }, ms);
  };
  arm(o.pingMs);
  const finish = () => {
    if (ended) return;
    ended = true;
    timers.clear(timer);
    o.onEnd(answered || t.stopReason !== null, t.stopReason === "tool_use");
    void reader?.cancel().catch(() => {});
  };

  async function run(): Promise<void> {
    let res: Response;
    try {
      res = await o.upstream;
    } catch (error) {
      const f = fromQmError(asQmError(error));
      await write(t.fail(f.type, f.message));
      return;
    }
    if (ended) {
      // The client left while the upstream was being reached: end the exchange now.
      void res.body?.cancel().catch(() => {});
      return;
    }
    if (res.status !== 200 || !res.body) {
      // Headers went out as 200 long ago: the upstream's refusal becomes an error event.
      const text = await res.text().catch(() => null);
      answered = text !== null;
      const f = fromUpstream(res.status, text ?? "", o.model, res.headers.get("retry-after"));
      await write(t.fail(f.type, f.message));
      return;
    }
    reader = res.body.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    while (!t.finished && !ended) {
      const step = await readUpstream(reader, o, () => ended);
      if (step.kind === "left") return;
      if (step.kind === "failed") {
        // A timeout (the deadline aborted the read): 504, `timeout_error`.
        const f = step.timeout ? fromQmError(step.timeout) : null;
        await write(t.fail(f?.type ?? "api_error", f?.message ?? step.message));
        return;
      }
      if (step.kind === "done") {
        answered = true;
        events.end();
        pending += t.end();
      } else {
        events.feed(step.value);
      }
      if (pending !== "") {
        const text = pending;
        pending = "";
        const wrote = write(text);
        if (typeof wrote !== "number") await wrote;
      }
      if (step.kind === "done") return;
    }
  }

  const direct: Bun.DirectUnderlyingSource<Uint8Array> = {
    type: "direct",
    async pull(controller) {
      out = controller;
      try {
        if (early !== "") {
          const text = early;
          early = "";
          await write(text);
        }
        await run();
      } finally {
        controller.close();
        finish();
      }
    },
    cancel() {
      finish();
      o.onCancel();
    },
  };
  return new ReadableStream(direct as unknown as Bun.UnderlyingSource<Uint8Array>);
}
