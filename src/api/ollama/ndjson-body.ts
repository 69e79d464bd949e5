/**
 * The thin stream around the pure transducer: reads the upstream's SSE bytes (`SseEvents`
 * frames them per the WHATWG SSE spec), feeds each `data` payload to the `NdjsonTranslator`,
 * and hands the client its NDJSON lines as it asks for them. Each read of the upstream is timed
 * by the call's deadline; a failure after the 200 is an `{"error": …}` line, which Ollama's
 * clients raise as an error (ollama-js throws on a line with `error`).
 */
import type { ReadWatch } from "../../proxy/deadline.ts";
import { SseEvents } from "../chat/sse-events.ts";
import { readUpstream } from "../exchange/read-upstream.ts";
import type { NdjsonTranslator } from "./stream.ts";

export interface NdjsonStreamOptions {
  upstream: Response;
  translator: NdjsonTranslator;
  model: string;
  deadline?: ReadWatch | null;
  logFailure?: (error: unknown) => void;
  /** Called exactly once when the stream is over: answered in full, ended in tool calls. */
  onEnd: (answered: boolean, toolCalls: boolean) => void;
  /** The client went away: stop the upstream. */
  onCancel: () => void;
}

const encoder = new TextEncoder();

export function ndjsonStream(o: NdjsonStreamOptions): ReadableStream<Uint8Array> {
  const t = o.translator;
  let pending = "";
  const events = new SseEvents({
    onEvent: (data) => {
      pending += t.event(data);
    },
    // Lines are parsed whole: a delta of megabytes is held like any other.
    bigLineBytes: Number.POSITIVE_INFINITY,
    bigLine: () => {
      throw new Error("unreachable: no line is big");
    },
  });
  const reader = o.upstream.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
  let ended = false;
  let answered = false;
  /** A read of the upstream failed (or timed out): the answer is not whole. */
  let broken = false;
  const finish = () => {
    if (ended) return;
    ended = true;
    o.onEnd(answered, t.toolCalls);
    void reader.cancel().catch(() => {});
  };
  return new ReadableStream<Uint8Array>({
    async pull(ctl) {
      // Read until there is something to hand on, or the stream is over.
      while (pending === "" && !t.finished) {
        const step = await readUpstream(reader, o, () => ended);
        if (step.kind === "left") return;
        if (step.kind === "failed") {
          broken = true;
          pending += t.fail(step.message);
          break;
        }
        if (step.kind === "done") {
          events.end();
          pending += t.end();
          break;
        }
        events.feed(step.value);
      }
      if (pending !== "") {
        ctl.enqueue(encoder.encode(pending));
        pending = "";
      }
      if (t.finished) {
        // [DONE] (or an error) is the end even if the body has more: nothing follows it.
        answered = !broken;
        ctl.close();
        finish();
      }
    },
    cancel() {
      finish();
      o.onCancel();
    },
  });
}
