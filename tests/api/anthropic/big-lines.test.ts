/**
 * Data lines too long to hold go through `DeltaScanner` as they arrive. Whatever is streamed
 * that way, the client must get the same message as from the line parsed whole: the fixtures
 * are replayed with a tiny big-line limit at every split, and a 4 MiB delta end to end.
 */
import { describe, expect, test } from "bun:test";
import { StreamTranslator } from "../../../src/api/anthropic/translate/stream.ts";
import { translatedStream } from "../../../src/api/chat/translated-body.ts";
import { chunk, sseResponse, sseText } from "../../support/openai-answers.ts";
import { build } from "./grammar.ts";
import { bodyOf, encoder, OPTS } from "./replay.ts";
import { parseEvents } from "./support.ts";

async function translate(parts: Uint8Array[], bigLineBytes?: number) {
  const stream = translatedStream({
    upstream: sseResponse(bodyOf(parts)),
    translator: new StreamTranslator({ ...OPTS, stopSequences: ["###"] }),
    model: "m",
    pingMs: 60_000,
    onEnd: () => {},
    onCancel: () => {},
    ...(bigLineBytes === undefined ? {} : { bigLineBytes }),
  });
  const text = await new Response(stream).text();
  // Invented tool ids are random; the rest must match.
  return build(parseEvents(text.replace(/toolu_[0-9a-f]{24}/g, "toolu_X"))).message;
}

describe("a line streamed as it comes gives the message it gives whole", () => {
  const fixture = (name: string) => Bun.file(`${import.meta.dir}/fixtures/${name}`).text();

  test.each(["llama-cpp-tools.sse", "vllm-reasoning.sse"])("%s at every split", async (name) => {
    const bytes = encoder.encode(await fixture(name));
    const want = await translate([bytes]);
    for (let k = 1; k < bytes.length; k++) {
      const parts = [bytes.subarray(0, k), bytes.subarray(k)];
      expect(await translate(parts, 8)).toEqual(want);
    }
    // Byte by byte: every data line goes through the scanner.
    expect(
      await translate(
        Array.from(bytes, (_, i) => bytes.subarray(i, i + 1)),
        8,
      ),
    ).toEqual(want);
  });

  test("a 4 MiB delta, in odd-sized pieces, comes through whole and in order", async () => {
    const piece = 'Zürich 🗼 "quoted" \\ \n';
    const big = piece.repeat(Math.ceil((4 << 20) / piece.length));
    const text = sseText([
      chunk({ role: "assistant", content: "" }),
      chunk({ reasoning_content: "thinking first" }),
      chunk({ content: big }),
      chunk({ content: " and a small one" }, "stop"),
    ]);
    const bytes = encoder.encode(text);
    const parts: Uint8Array[] = [];
    for (let at = 0, step = 1000; at < bytes.length; at += step, step = (step * 13 + 7) % 70_001) {
      parts.push(bytes.subarray(at, at + step));
    }
    const message = await translate(parts);
    expect(message.content).toEqual([
      { type: "thinking", thinking: "thinking first", signature: "" },
      { type: "text", text: `${big} and a small one` },
    ]);
    expect(message.stop_reason).toBe("end_turn");
  });
});
