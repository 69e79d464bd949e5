/**
 * The thin stream around the pure translator: reads the upstream's SSE bytes (eventsource-parser
 * handles split lines, CRLF and comments per the WHATWG SSE spec), feeds each event to the
 * `StreamTranslator`, and hands its Anthropic events on as the client asks for them.
 *
 * It also writes `ping` events while nothing else has gone out for `pingMs`: prefill of a long
 * prompt on a local GPU can take minutes, and llama-server holds even its response headers
 * until the first token, so the upstream may be a pending promise when the stream starts.
 * Anthropic sends the same keep-alive (`event: ping`, streaming docs).
 */
import { createParser } from "eventsource-parser";
import { asQmError } from "../../shared/errors.ts";
import { fromQmError, fromUpstream } from "./errors.ts";
import type { StreamTranslator } from "./translate/stream.ts";

export interface TranslatedStreamOptions {
  /** The upstream's response, or the promise of it (rejecting with a QmError). */
  upstream: Response | Promise<Response>;
  translator: StreamTranslator;
  /** Model id, for error messages. */
  model: string;
  pingMs: number;
  /** Called exactly once when the stream is over; `toolCalls` when it ended in tool use. */
  onEnd: (toolCalls: boolean) => void;
  /** The client went away: stop the upstream. */
  onCancel: () => void;
}

const encoder = new TextEncoder();

type ReadStep =
  | Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>["read"]>>
  | { error: unknown };

export function translatedStream(o: TranslatedStreamOptions): ReadableStream<Uint8Array> {
  const t = o.translator;
  let queue: string[] = [];
  let wake: (() => void) | null = null;
  let lastWrite = performance.now();
  let ended = false;
  let settled: { ok: true; res: Response } | { ok: false; error: unknown } | null = null;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  let pendingRead: Promise<ReadStep> | null = null;
  const decoder = new TextDecoder();

  const push = (text: string) => {
    if (text === "") return;
    queue.push(text);
    wake?.();
  };
  const parser = createParser({ onEvent: (e) => push(t.event(e.data, e.event)) });
  // One timer, re-armed for when the stream will have been quiet for `pingMs`: writes only
  // note the time, so a token stream costs no timer churn, and no gap exceeds `pingMs`.
  let timer: Timer;
  const arm = (ms: number) => {
    timer = setTimeout(() => {
      const quiet = performance.now() - lastWrite;
      if (quiet >= o.pingMs) {
        push(t.ping());
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
    clearTimeout(timer);
    o.onEnd(t.stopReason === "tool_use");
    void reader?.cancel().catch(() => {});
  };
  const nextWake = () =>
    new Promise<null>((resolve) => {
      wake = () => {
        wake = null;
        resolve(null);
      };
    });

  Promise.resolve(o.upstream)
    .then(
      (res) => {
        settled = { ok: true, res };
        // The client left while the upstream was being reached: end the relay now.
        if (ended) void res.body?.cancel().catch(() => {});
      },
      (error) => {
        settled = { ok: false, error };
      },
    )
    .finally(() => wake?.());

  /** One step of work when nothing is queued; false = wait for a wake-up. */
  async function step(): Promise<void> {
    if (!settled) {
      await nextWake();
      return;
    }
    if (!settled.ok) {
      const f = fromQmError(asQmError(settled.error));
      push(t.fail(f.type, f.message));
      return;
    }
    if (!reader) {
      const res = settled.res;
      if (res.status !== 200 || !res.body) {
        // Headers went out as 200 long ago: the upstream's refusal becomes an error event.
        const text = await res.text().catch(() => "");
        const f = fromUpstream(res.status, text, o.model, res.headers.get("retry-after"));
        push(t.fail(f.type, f.message));
        return;
      }
      reader = res.body.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    }
    pendingRead ??= reader.read().catch((error: unknown) => ({ error }));
    const got = await Promise.race([pendingRead, nextWake()]);
    if (got === null) return; // a ping (or nothing) to send first; the read stays pending
    pendingRead = null;
    if ("error" in got) {
      push(t.fail("api_error", `model "${o.model}" failed mid-answer: ${String(got.error)}`));
    } else if (got.done) {
      parser.feed(decoder.decode());
      parser.reset({ consume: true });
      push(t.end());
    } else {
      parser.feed(decoder.decode(got.value, { stream: true }));
    }
  }

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          if (queue.length > 0) {
            const text = queue.join("");
            queue = [];
            lastWrite = performance.now();
            controller.enqueue(encoder.encode(text));
            if (t.finished) {
              controller.close();
              finish();
            }
            return;
          }
          if (t.finished || ended) {
            controller.close();
            finish();
            return;
          }
          await step();
        }
      },
      cancel() {
        finish();
        o.onCancel();
      },
    },
    { highWaterMark: 0 },
  );
}
