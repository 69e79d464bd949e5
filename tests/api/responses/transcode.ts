/**
 * The Responses translator as the stream runs it: upstream bytes through the one transcoder
 * (`api/chat/transcoder.ts`) into `ResponsesStream`, and the SSE text it writes read back into
 * event objects (a relayed `: qm-status` comment as a `RELAYED` entry, in its place).
 */
import { Transcoder } from "../../../src/api/chat/transcoder.ts";
import {
  type ResponsesEvent,
  ResponsesStream,
  type StreamShape,
} from "../../../src/api/responses/translate/stream.ts";

/** The `type` standing for a relayed comment among the events read back. */
export const RELAYED = ":comment";

/** The events of SSE text, in order; a comment frame as `{type: RELAYED, frame}`. */
export function eventsOf(text: string): ResponsesEvent[] {
  const out: ResponsesEvent[] = [];
  for (const frame of text.split("\n\n")) {
    if (frame === "") continue;
    if (frame.startsWith(":")) {
      out.push({ type: RELAYED, sequence_number: -1, frame: `${frame}\n\n` });
      continue;
    }
    const data = frame.split("\n").find((l) => l.startsWith("data: "));
    if (data) out.push(JSON.parse(data.slice(6)) as ResponsesEvent);
  }
  return out;
}

export interface Transcoded {
  text: string;
  events: ResponsesEvent[];
  t: ResponsesStream;
}

/** `response.created` at once, then the upstream body in `parts`, then its end. */
export function transcode(parts: Uint8Array[], shape: StreamShape): Transcoded {
  const t = new ResponsesStream(shape);
  const x = new Transcoder(t, { model: "m" });
  let text = t.start();
  for (const p of parts) text += x.feed(p);
  text += x.end();
  return { text, events: eventsOf(text), t };
}

/** A stream fed by hand: each call gives the events it made (the first, the start's too). */
export function feeder(shape: StreamShape) {
  const t = new ResponsesStream(shape);
  const x = new Transcoder(t, { model: "m" });
  let pending = t.start();
  const take = (text: string) => {
    const out = eventsOf(pending + text);
    pending = "";
    return out;
  };
  return {
    t,
    chunk: (bytes: Uint8Array) => take(x.feed(bytes)),
    end: () => take(x.end()),
    fail: (message: string) => take(t.fail({ kind: "broken", message })),
  };
}
