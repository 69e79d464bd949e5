/** Reads an SSE response chunk by chunk into parsed `data:` payloads with arrival times. */
import { createParser } from "eventsource-parser";

export interface SseEvent {
  data: string;
  /** performance.now() when the chunk carrying it arrived. */
  at: number;
}

export async function readSse(res: Response): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  let now = 0;
  const parser = createParser({ onEvent: (e) => events.push({ data: e.data, at: now }) });
  const decoder = new TextDecoder();
  const reader = res.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    now = performance.now();
    parser.feed(decoder.decode(value, { stream: true }));
  }
  return events;
}

/** The JSON payloads of a stream, asserting it ends with `data: [DONE]`. */
export function chunks(events: SseEvent[]): Record<string, unknown>[] {
  if (events.at(-1)?.data !== "[DONE]") throw new Error("stream did not end with [DONE]");
  return events.slice(0, -1).map((e) => JSON.parse(e.data) as Record<string, unknown>);
}
