/**
 * The one tee on an answer: it sees every chunk the upstream sends as it passes (or is told by
 * a translator that parsed the answer anyway), and is the one place that knows how the answer
 * ended: whether in tool calls (the agent-loop hold), its token counts and its finish reason
 * (the request's record). Two scanners read a relayed answer for that, neither of which
 * buffers or parses it: `EndScan` for a tool-call ending and `AnswerScan` for the answer's own
 * usage and finish reason (the proxy's `SseCheck` judges the same bytes for a broken stream).
 *
 * An OpenAI answer says all of that at its end — the finish reason in the last choice event,
 * `usage` (and llama.cpp's `timings`) in the last event before `[DONE]`, or at the end of a
 * whole JSON body — so for it (`tail`) the chunks are not scanned as they pass: the observer
 * keeps references to the last few (at least `TAIL_BYTES` of them, no copy) and scans those once,
 * when the exchange ends (`settle`). A relayed token then costs an array push, not two scans.
 * Other answers (Anthropic's, whose input tokens come first; Responses', whose function calls
 * may lie anywhere) are scanned chunk by chunk as they pass.
 */

import { AnswerScan } from "../../observe/answer-scan.ts";
import { AnswerUsage } from "../../observe/answer-usage.ts";
import { type EndPattern, EndScan } from "../../proxy/end-scan.ts";
import type { ChunkObserver } from "../../proxy/relay.ts";

/**
 * How much of a stream's end `tail` mode keeps to scan: its last events (the finish reason's,
 * the usage's with llama.cpp's `timings`, `[DONE]`: well under 1 KiB), with room to spare. What
 * is kept stays in memory until the stream ends: with 16 KiB kept per stream, qm's RSS right
 * after 200 concurrent 200-token streams was 10 – 12 MB higher than with 4 KiB.
 */
export const TAIL_BYTES = 4 * 1024;
/** The most of one whole body (a JSON answer) that is scanned: its end. */
const WHOLE_BYTES = 64 * 1024;

export class Observer implements ChunkObserver {
  private readonly scan: EndScan | null;
  private toolEnd = false;
  /** The answer's usage and finish reason; a translator fills it in (`readAnswer`) as it parses. */
  readonly usage = new AnswerUsage();
  /**
   * Made on the first scanned chunk (a translated answer never needs one); null for good when
   * nobody reads the answer's usage (`ignoreUsage`).
   */
  private answer: AnswerScan | null | undefined;
  /** `tail` mode: the last chunks, not yet scanned (null in the other mode, or once settled). */
  private last: Uint8Array[] | null;
  private lastBytes = 0;

  /**
   * `toolEnd`: the byte pattern of a tool-call ending in this API's answers, if it is watched.
   * `tail`: the answer states how it ended at its end (an OpenAI one): scan only that, once.
   */
  constructor(toolEnd: EndPattern | null, opts: { tail?: boolean } = {}) {
    this.scan = toolEnd ? new EndScan(toolEnd) : null;
    this.last = opts.tail ? [] : null;
  }

  chunk(chunk: Uint8Array): void {
    const last = this.last;
    if (last !== null) {
      last.push(chunk);
      this.lastBytes += chunk.byteLength;
      // Drop the oldest while what is left still holds TAIL_BYTES.
      while (last.length > 1 && this.lastBytes - (last[0] as Uint8Array).byteLength >= TAIL_BYTES) {
        this.lastBytes -= (last.shift() as Uint8Array).byteLength;
      }
      return;
    }
    this.read(chunk);
  }

  private read(chunk: Uint8Array): void {
    this.scan?.feed(chunk);
    if (this.answer === undefined) this.answer = new AnswerScan(this.usage);
    this.answer?.feed(chunk);
  }

  /**
   * The answer is over: in `tail` mode, its kept end is scanned now (once). A single chunk
   * larger than that (a whole JSON body) is scanned over its last `WHOLE_BYTES`: the usage of
   * an OpenAI answer follows its content.
   */
  settle(): void {
    const last = this.last;
    if (last === null) return;
    this.last = null;
    if (last.length === 0 || (this.answer === null && this.scan === null)) return;
    let bytes = last.length === 1 ? (last[0] as Uint8Array) : Buffer.concat(last);
    if (bytes.byteLength > WHOLE_BYTES) bytes = bytes.subarray(bytes.byteLength - WHOLE_BYTES);
    this.read(bytes);
  }

  /** Nothing reads the answer's usage: its bytes are not scanned for it. */
  ignoreUsage(): void {
    this.answer = null;
  }

  /** A translator that parsed the answer says how it ended. */
  ended(toolCalls: boolean): void {
    if (toolCalls) this.toolEnd = true;
  }

  /** The answer ended in tool calls (an agent loop will likely come back). */
  get toolCalls(): boolean {
    return this.toolEnd || (this.scan?.found ?? false);
  }
}
