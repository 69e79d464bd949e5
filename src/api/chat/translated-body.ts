/**
 * The one body of every translated stream (Anthropic, Responses, Ollama): the thin stream
 * around the pure `Transcoder` (the upstream's SSE bytes in, the API's text out). It reads the
 * upstream's body, each read timed by the call's deadline, and writes what the transcoder
 * returns. Bun's "direct" stream: the output of each upstream chunk is one string write and one
 * flush, straight to the socket.
 *
 * While nothing else went out for `pingMs` it writes the translator's keep-alive, even before
 * the upstream's headers: prefill of a long prompt on a local GPU can take minutes, and
 * llama-server holds even its response headers until the first token, so the upstream may be
 * a pending promise when the stream starts. Keep-alives are written by their timer directly
 * (writes are whole events, and JS runs one callback at a time), so reading the upstream needs
 * no race against a wake-up per chunk. A relayed `: qm-status` comment counts as a write.
 *
 * The end is told once (`onEnd`): `answered` when the upstream answered in full (its body
 * ended, it refused, or the translator completed the answer), `toolCalls` when the answer
 * ended in tool calls.
 */
import type { ReadWatch } from "../../proxy/deadline.ts";
import { asQmError } from "../../shared/errors.ts";
import { realTimers, type Timers } from "../../shared/timer.ts";
import { readUpstream } from "../exchange/read-upstream.ts";
import { readRefusal } from "./refusal.ts";
import { Transcoder, type TranscoderOptions } from "./transcoder.ts";
import type { ChatTranslator } from "./translator.ts";

export interface TranslatedStreamOptions extends TranscoderOptions {
  /** The upstream's response, or the promise of it (rejecting with a QmError). */
  upstream: Response | Promise<Response>;
  translator: ChatTranslator;
  /** The keep-alive period; none when absent. */
  pingMs?: number | undefined;
  /** The call's time limits: each read of the upstream's body is timed (pings never count). */
  deadline?: ReadWatch | null | undefined;
  /** The clock of the keep-alive timer; real time unless a test moves a fake one. */
  timers?: Timers | undefined;
  /** Told the raw error of a body read that failed (for qm's log; the client gets a cause). */
  logFailure?: ((error: unknown) => void) | undefined;
  /** Called exactly once when the stream is over. */
  onEnd: (answered: boolean, toolCalls: boolean) => void;
  /** The client went away: stop the upstream. */
  onCancel: () => void;
}

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
  const text = new Transcoder(t, o);
  // One timer, re-armed for when the stream will have been quiet for `pingMs`: writes only
  // note the time, so a token stream costs no timer churn, and no gap exceeds `pingMs`.
  const pingMs = o.pingMs ?? 0;
  let timer: unknown;
  const arm = (ms: number) => {
    timer = timers.set(() => {
      if (ended) return;
      const quiet = timers.now() - lastWrite;
      if (quiet >= pingMs) {
        void write(t.keepAlive());
        arm(pingMs);
      } else {
        arm(pingMs - quiet);
      }
    }, ms);
  };
  if (pingMs > 0) arm(pingMs);
  const finish = () => {
    if (ended) return;
    ended = true;
    if (timer !== undefined) timers.clear(timer);
    o.onEnd(answered || t.answered, t.toolCalls);
    void reader?.cancel().catch(() => {});
  };

  async function run(): Promise<void> {
    let res: Response;
    try {
      res = await o.upstream;
    } catch (error) {
      await write(t.fail({ kind: "qm", error: asQmError(error) }));
      return;
    }
    if (ended) {
      // The client left while the upstream was being reached: end the exchange now.
      void res.body?.cancel().catch(() => {});
      return;
    }
    if (res.status !== 200 || !res.body) {
      // Headers went out as 200 already: the upstream's refusal becomes the API's error.
      const text = await res.text().catch(() => null);
      answered = text !== null;
      const refusal = readRefusal(res.status, text ?? "", res.headers.get("retry-after"));
      await write(t.fail({ kind: "refusal", refusal, model: o.model }));
      return;
    }
    reader = res.body.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    while (!t.finished && !ended) {
      const read = await readUpstream(reader, o, () => ended);
      if (read.kind === "left") return;
      if (read.kind === "failed") {
        // A timeout (the deadline aborted the read) is qm's own error: a 504.
        const f = read.timeout
          ? { kind: "qm" as const, error: read.timeout }
          : { kind: "broken" as const, message: read.message };
        await write(t.fail(f));
        return;
      }
      if (read.kind === "done") answered = true;
      const out = read.kind === "done" ? text.end() : text.feed(read.value);
      if (out !== "") {
        const wrote = write(out);
        if (typeof wrote !== "number") await wrote;
      }
      if (read.kind === "done") return;
    }
    const tail = ended ? null : (t.settle?.() ?? null);
    if (tail) {
      // The answer is over: the upstream is stopped before the last I/O, not after it.
      void reader.cancel().catch(() => {});
      await write(await tail);
    }
  }

  const direct: Bun.DirectUnderlyingSource<Uint8Array> = {
    type: "direct",
    async pull(controller) {
      out = controller;
      try {
        const first = t.start() + early;
        early = "";
        await write(first);
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
