/**
 * The one tee on an answer: it sees every chunk the upstream sends as it passes (or is told by
 * a translator that parsed the answer anyway), and is the one place that knows how the answer
 * ended: whether in tool calls (the agent-loop hold), its token counts and its finish reason
 * (the request's record). A relayed chunk is read by three scanners, none of which buffers or
 * parses the answer: two here (`EndScan` for a tool-call ending, `AnswerScan` for the answer's
 * own usage and finish reason) and the proxy's `SseCheck`, which judges the same bytes for a
 * broken stream.
 */

import { AnswerScan } from "../../observe/answer-scan.ts";
import { AnswerUsage } from "../../observe/answer-usage.ts";
import { type EndPattern, EndScan } from "../../proxy/end-scan.ts";
import type { ChunkObserver } from "../../proxy/relay.ts";

export class Observer implements ChunkObserver {
  private readonly scan: EndScan | null;
  private toolEnd = false;
  /** The answer's usage and finish reason; a translator fills it in (`readAnswer`) as it parses. */
  readonly usage = new AnswerUsage();
  /**
   * Made on the first relayed chunk (a translated answer never needs one); null for good when
   * nobody reads the answer's usage (`ignoreUsage`).
   */
  private answer: AnswerScan | null | undefined;

  /** `toolEnd`: the byte pattern of a tool-call ending in this API's answers, if it is watched. */
  constructor(toolEnd: EndPattern | null) {
    this.scan = toolEnd ? new EndScan(toolEnd) : null;
  }

  chunk(chunk: Uint8Array): void {
    this.scan?.feed(chunk);
    if (this.answer === undefined) this.answer = new AnswerScan(this.usage);
    this.answer?.feed(chunk);
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
