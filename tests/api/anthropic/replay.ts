/**
 * Replays scripted upstream bytes through the real stream wrapper (decoder, SSE parser,
 * translator), whole and split at every byte offset.
 */
import { expect } from "bun:test";
import {
  type StreamOptions,
  StreamTranslator,
} from "../../../src/api/anthropic/translate/stream.ts";
import { translatedStream } from "../../../src/api/chat/translated-body.ts";
import { sseResponse } from "../../support/openai-answers.ts";
import { build } from "./grammar.ts";
import { parseEvents } from "./support.ts";

export const encoder = new TextEncoder();
export const OPTS: StreamOptions = {
  id: "msg_1",
  model: "claude-local",
  stopSequences: [],
  inputTokens: 3,
};

export function bodyOf(parts: Uint8Array[], fail?: Error): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(p);
      if (fail) c.error(fail);
      else c.close();
    },
  });
}

export async function run(
  upstream: Response | Promise<Response>,
  opts: StreamOptions = OPTS,
  pingMs = 60_000,
): Promise<{ text: string; toolCalls: boolean | null }> {
  let toolCalls: boolean | null = null;
  const stream = translatedStream({
    upstream,
    translator: new StreamTranslator(opts),
    model: "m",
    pingMs,
    onEnd: (_answered, t) => {
      if (toolCalls !== null) throw new Error("onEnd called twice");
      toolCalls = t;
    },
    onCancel: () => {},
  });
  const text = await new Response(stream).text();
  return { text, toolCalls };
}

/** Translates `upstream` whole and split at every byte offset; all runs must agree. */
export async function everySplit(upstream: string, opts: StreamOptions = OPTS) {
  const bytes = encoder.encode(upstream);
  const whole = await run(sseResponse(bodyOf([bytes])), opts);
  for (let k = 1; k < bytes.length; k++) {
    const split = await run(sseResponse(bodyOf([bytes.slice(0, k), bytes.slice(k)])), opts);
    // Invented tool ids are random; everything else must match byte for byte.
    const same = (t: string) => t.replace(/toolu_[0-9a-f]{24}/g, "toolu_X");
    if (same(split.text) !== same(whole.text)) {
      expect(`split at ${k}:\n${split.text}`).toBe(whole.text);
    }
  }
  const events = parseEvents(whole.text);
  return { ...whole, events, built: build(events) };
}

export const tc = (index: number, fields: { id?: string; name?: string; args?: string }) => ({
  tool_calls: [
    {
      index,
      ...(fields.id ? { id: fields.id, type: "function" } : {}),
      function: {
        ...(fields.name ? { name: fields.name } : {}),
        ...(fields.args !== undefined ? { arguments: fields.args } : {}),
      },
    },
  ],
});
