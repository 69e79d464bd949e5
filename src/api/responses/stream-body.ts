/**
 * The thin stream around the pure translator (`translate/stream.ts`): reads the upstream's
 * bytes as they come, hands each chunk to the translator and writes the events it returns, one
 * write and one flush per chunk (nothing is buffered beyond that). `response.created` goes out
 * at once; while nothing else has gone out for `pingMs` (a long prefill), an SSE comment keeps
 * the connection alive — every SSE parser drops comments. An upstream `: qm-status` comment (a
 * qm peer loading the model) goes out as the same comment, in order with the events, and
 * counts as a write (no keep-alive while they come). A failure of the upstream (a refusal
 * after the 200, a cut, a timeout) becomes `response.failed`.
 */
import type { ReadWatch } from "../../proxy/deadline.ts";
import { asQmError } from "../../shared/errors.ts";
import { sseComment, sseEvent } from "../../shared/sse.ts";
import { realTimers, type Timers } from "../../shared/timer.ts";
import { upstreamErrorObject } from "../anthropic/errors.ts";
import { readUpstream } from "../exchange/read-upstream.ts";
import { type ResponsesEvent, type ResponsesStream, relayedFrame } from "./translate/stream.ts";

export interface ResponsesBodyOptions {
  /** The upstream's response, or the promise of it (rejecting with a QmError). */
  upstream: Response | Promise<Response>;
  translator: ResponsesStream;
  /** Model id, for error messages. */
  model: string;
  pingMs: number;
  /** The call's time limits: each read of the upstream's body is timed (pings never count). */
  deadline?: ReadWatch | null | undefined;
  timers?: Timers | undefined;
  /** Told the raw error of a body read that failed (for qm's log; the client gets a cause). */
  logFailure?: (error: unknown) => void;
  /** Exactly once, when the stream is over: whether the upstream answered in full, and how. */
  onEnd: (answered: boolean, toolCalls: boolean) => void;
  /** The client went away: stop the upstream. */
  onCancel: () => void;
}

export const KEEP_ALIVE = sseComment("keep-alive");

/**
 * Events as SSE frames, each with its `event:` line, as OpenAI sends them; a relayed upstream
 * comment as its comment frame.
 */
export function framesOf(events: ResponsesEvent[]): string {
  let s = "";
  for (const e of events) s += relayedFrame(e) ?? sseEvent(JSON.stringify(e), e.type);
  return s;
}

/** The message of an upstream's refusal body, or a plain one. */
export function refusalMessage(status: number, text: string, model: string): string {
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the raw text is the message
  }
  const e = upstreamErrorObject(parsed);
  const raw = typeof e?.message === "string" ? e.message : text.slice(0, 500);
  return `model "${model}" answered HTTP ${status}${raw ? `: ${raw}` : ""}`;
}

export function responsesBody(o: ResponsesBodyOptions): ReadableStream<Uint8Array> {
  const t = o.translator;
  const timers = o.timers ?? realTimers;
  let out: ReadableStreamDirectController | null = null;
  let lastWrite = timers.now();
  let ended = false;
  let answered = false;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;

  const write = (text: string): number | Promise<number> => {
    if (text === "" || ended || !out) return 0;
    lastWrite = timers.now();
    const wrote = out.write(text);
    const flushed = out.flush();
    return typeof wrote !== "number" ? wrote : flushed;
  };
  let timer: unknown;
  const arm = (ms: number) => {
    timer = timers.set(() => {
      if (ended) return;
      const quiet = timers.now() - lastWrite;
      if (quiet >= o.pingMs) {
        void write(KEEP_ALIVE);
        arm(o.pingMs);
      } else arm(o.pingMs - quiet);
    }, ms);
  };
  const finish = () => {
    if (ended) return;
    ended = true;
    timers.clear(timer);
    o.onEnd(answered || (t.finished && t.ending !== "failed"), t.hasCalls);
    void reader?.cancel().catch(() => {});
  };

  async function run(): Promise<void> {
    await write(framesOf(t.start()));
    let res: Response;
    try {
      res = await o.upstream;
    } catch (error) {
      await write(framesOf(t.fail("server_error", asQmError(error).message)));
      return;
    }
    if (ended) {
      void res.body?.cancel().catch(() => {});
      return;
    }
    if (res.status !== 200 || !res.body) {
      // Headers went out as 200 already: the upstream's refusal becomes `response.failed`.
      const text = await res.text().catch(() => null);
      answered = text !== null;
      await write(
        framesOf(t.fail("server_error", refusalMessage(res.status, text ?? "", o.model))),
      );
      return;
    }
    reader = res.body.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    while (!t.finished && !ended) {
      const step = await readUpstream(reader, o, () => ended);
      if (step.kind === "left") return;
      if (step.kind === "failed") {
        await write(framesOf(t.fail("server_error", step.message)));
        return;
      }
      const done = step.kind === "done";
      const events = step.kind === "chunk" ? t.chunk(step.value) : t.end();
      if (done) answered = true;
      if (events.length > 0) {
        const wrote = write(framesOf(events));
        if (typeof wrote !== "number") await wrote;
      }
      if (done) return;
    }
  }

  const direct: Bun.DirectUnderlyingSource<Uint8Array> = {
    type: "direct",
    async pull(controller) {
      out = controller;
      arm(o.pingMs);
      try {
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
