/**
 * The one tee on an answer: it sees every chunk the upstream sends as it passes (or is told by
 * a translator that parsed the answer anyway), and is the one place that knows how the answer
 * ended. Nothing else reads the stream a second time. Today it tells whether the answer ended
 * in tool calls (the agent-loop hold); it is also where time to first token, token counts and
 * the finish reason are to be read, once for every API.
 */
import { type EndPattern, EndScan } from "../../proxy/end-scan.ts";
import type { ChunkObserver } from "../../proxy/relay.ts";

export class Observer implements ChunkObserver {
  private readonly scan: EndScan | null;
  private toolEnd = false;

  /** `toolEnd`: the byte pattern of a tool-call ending in this API's answers, if it is watched. */
  constructor(toolEnd: EndPattern | null) {
    this.scan = toolEnd ? new EndScan(toolEnd) : null;
  }

  chunk(chunk: Uint8Array): void {
    this.scan?.feed(chunk);
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
