/**
 * The three translators behind the one body, with everything that would differ between two
 * runs made fixed (item ids, the clock): the same upstream bytes give the same text.
 */

import { StreamTranslator } from "../../../src/api/anthropic/translate/stream.ts";
import { translatedStream } from "../../../src/api/chat/translated-body.ts";
import type { ChatTranslator } from "../../../src/api/chat/translator.ts";
import { NdjsonTranslator } from "../../../src/api/ollama/stream.ts";
import { ResponsesStream } from "../../../src/api/responses/translate/stream.ts";
import { bodyOf } from "../anthropic/replay.ts";

export type Api = "anthropic" | "responses" | "ollama";
export const APIS: Api[] = ["anthropic", "responses", "ollama"];

export function translator(api: Api): ChatTranslator {
  if (api === "anthropic") {
    return new StreamTranslator({ id: "msg_1", model: "m", stopSequences: [], inputTokens: 3 });
  }
  if (api === "responses") {
    let n = 0;
    return new ResponsesStream({
      id: "resp_1",
      model: "m",
      createdAt: 1,
      echo: {},
      ids: (p) => `${p}_${n++}`,
    });
  }
  let t = 100;
  return new NdjsonTranslator({
    kind: "chat",
    model: "m",
    think: undefined,
    timing: { start: 0, granted: 10, sent: 20 },
    clock: { now: () => ++t, iso: () => "2026-01-01T00:00:00.000Z" },
  });
}

export interface Through {
  text: string;
  ends: [boolean, boolean][];
}

/** The upstream body in `parts` through `api`'s translator and the one body. */
export async function through(
  api: Api,
  parts: Uint8Array[],
  more: { fail?: Error; maxEventBytes?: number } = {},
): Promise<Through> {
  const ends: [boolean, boolean][] = [];
  const stream = translatedStream({
    upstream: new Response(bodyOf(parts, more.fail), {
      headers: { "content-type": "text/event-stream" },
    }),
    translator: translator(api),
    model: "m",
    maxEventBytes: more.maxEventBytes,
    onEnd: (answered, toolCalls) => ends.push([answered, toolCalls]),
    onCancel: () => {},
  });
  return { text: await new Response(stream).text(), ends };
}
