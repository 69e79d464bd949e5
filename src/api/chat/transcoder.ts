/**
 * The pure middle of every translated stream: the upstream's SSE bytes in, however they are
 * split, the API's text out. It frames the bytes (`SseEvents`, WHATWG SSE; a huge data line
 * through `DeltaScanner` as it comes), reads each event into a step (`chunk.ts`), tells the
 * request's record the answer's usage and finish reason, and hands the step to the API's `ChatTranslator`.
 * An upstream's `: qm-status` comment (a qm peer loading the model) is relayed as the same
 * comment, in its place among the events, where the API has comments. No I/O, no timers:
 * `translated-body.ts` reads and writes around it.
 */

import type { AnswerUsage } from "../../observe/answer-usage.ts";
import { relayedComment } from "../../shared/sse.ts";
import { type ChatStep, emptyDelta, readChunk, readPiece } from "./chunk.ts";
import { DeltaScanner } from "./delta-scan.ts";
import { MAX_EVENT_BYTES, SseEvents } from "./sse-events.ts";
import type { ChatTranslator } from "./translator.ts";

/**
 * A data line still unfinished past this many bytes is translated as it arrives rather than
 * held whole (`DeltaScanner`); below it, lines are parsed whole, which is cheaper.
 */
export const BIG_LINE_BYTES = 256 * 1024;

export interface TranscoderOptions {
  /** Model id, for error messages. */
  model: string;
  /** Told the answer's usage, timings and finish reason as they come (the request's record). */
  usage?: AnswerUsage | null | undefined;
  /** `BIG_LINE_BYTES` unless a test asks for less. */
  bigLineBytes?: number | undefined;
  /** `MAX_EVENT_BYTES` unless a test asks for less. */
  maxEventBytes?: number | undefined;
}

export class Transcoder {
  private out = "";
  private readonly events: SseEvents;

  constructor(
    private readonly t: ChatTranslator,
    o: TranscoderOptions,
  ) {
    const usage = o.usage ?? null;
    const maxEventBytes = o.maxEventBytes ?? MAX_EVENT_BYTES;
    /** The one delta every event is read into (translators keep none of it). */
    const into = emptyDelta();
    const step = (s: ChatStep) => {
      if (usage !== null && s.kind === "delta") {
        if (s.usage !== null) usage.readUsage(s.usage);
        if (s.timings !== null) usage.readTimings(s.timings);
        if (s.finish !== null) usage.readFinishReason(s.finish);
      }
      this.out += t.step(s);
    };
    this.events = new SseEvents({
      onEvent: (data, name) => {
        // Nothing after the end is read (a stop sequence, `[DONE]`, an error).
        if (t.finished) return;
        const s = readChunk(data, name, into);
        if (s !== null) step(s);
      },
      // Other comments (keep-alives, anything else) stay dropped.
      onComment: t.relaysStatus
        ? (text) => {
            this.out += relayedComment(text);
          }
        : undefined,
      bigLineBytes: o.bigLineBytes ?? BIG_LINE_BYTES,
      bigLine: () =>
        new DeltaScanner((kind, escaped) => {
          if (!t.finished) step(readPiece(kind, escaped));
        }),
      maxEventBytes,
      onOverflow: () => {
        const message = `model "${o.model}" sent one event of over ${maxEventBytes / 2 ** 20} MiB; qm holds no more of one`;
        this.out += t.fail({ kind: "broken", message });
      },
    });
  }

  /** The next bytes of the upstream's body: what they complete. */
  feed(bytes: Uint8Array): string {
    if (!this.t.finished) this.events.feed(bytes);
    const out = this.out;
    this.out = "";
    return out;
  }

  /** The body ended (an event without its blank line is dropped, as WHATWG SSE says). */
  end(): string {
    this.events.end();
    const out = this.out + this.t.end();
    this.out = "";
    return out;
  }
}
