/**
 * DeltaScanner: a chunk's bytes, cut anywhere, give back the streamed texts exactly (pieces
 * that are each valid inside a JSON string) and a skeleton that is the chunk without them.
 */
import { describe, expect, test } from "bun:test";
import { type DeltaKind, DeltaScanner } from "../../../src/api/chat/delta-scan.ts";

const enc = new TextEncoder();

function scan(parts: Uint8Array[]) {
  const pieces: [DeltaKind, string][] = [];
  const s = new DeltaScanner((kind, escaped) => pieces.push([kind, escaped]));
  for (const p of parts) s.feed(p);
  return { pieces, skeleton: s.end() };
}

/** Every piece alone must be valid JSON string content, with no half of a surrogate pair. */
function checkPieces(pieces: [DeltaKind, string][]) {
  for (const [, piece] of pieces) {
    const text = JSON.parse(`"${piece}"`) as string;
    expect(/[\ud800-\udbff]$/.test(text)).toBe(false);
    expect(/^[\udc00-\udfff]/.test(text)).toBe(false);
  }
}

/** The text each kind received, unescaped. */
const received = (pieces: [DeltaKind, string][], kind: DeltaKind) =>
  pieces
    .filter(([k]) => k === kind)
    .map(([, p]) => JSON.parse(`"${p}"`) as string)
    .join("");

const cuts = (bytes: Uint8Array) => {
  const all: Uint8Array[][] = [[bytes], Array.from(bytes, (_, i) => bytes.subarray(i, i + 1))];
  for (let k = 1; k < bytes.length; k++) all.push([bytes.subarray(0, k), bytes.subarray(k)]);
  return all;
};

const tricky = 'a "quoted" \\ back\\slash\nnew line\ttab é € 🗼 \u2028 </end> \u0001';

describe("DeltaScanner", () => {
  test("content and reasoning of choices[0].delta are streamed; the rest is the skeleton", () => {
    const chunk = {
      id: "c1",
      object: "chat.completion.chunk",
      choices: [
        {
          index: 0,
          delta: { reasoning_content: "think 🤔", content: tricky, tool_calls: [] },
          finish_reason: "stop",
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 9 },
    };
    const bytes = enc.encode(JSON.stringify(chunk));
    for (const parts of cuts(bytes)) {
      const { pieces, skeleton } = scan(parts);
      checkPieces(pieces);
      expect(received(pieces, "text")).toBe(tricky);
      expect(received(pieces, "thinking")).toBe("think 🤔");
      const empty = structuredClone(chunk);
      empty.choices[0]!.delta.content = "";
      empty.choices[0]!.delta.reasoning_content = "";
      expect(JSON.parse(skeleton)).toEqual(empty);
    }
  });

  test("escapes as the upstream wrote them: \\u escapes, escaped surrogate pairs, \\/", () => {
    const raw = '{"choices":[{"delta":{"reasoning":"\\u00e9\\ud83d\\uddfc\\/x\\\\"}}]}';
    for (const parts of cuts(enc.encode(raw))) {
      const { pieces, skeleton } = scan(parts);
      checkPieces(pieces);
      expect(received(pieces, "thinking")).toBe("é🗼/x\\");
      expect(JSON.parse(skeleton)).toEqual({ choices: [{ delta: { reasoning: "" } }] });
    }
  });

  test("strings elsewhere stay in the skeleton: other choices, keys that only look alike, nesting", () => {
    const chunk = {
      content: "top-level",
      choices: [
        {
          delta: {
            role: "assistant",
            tool_calls: [{ function: { arguments: '{"content":"no"}' } }],
          },
        },
        { delta: { content: "second choice" } },
      ],
      delta: { content: "not under choices" },
      "con\\tent": "odd key",
    };
    const bytes = enc.encode(JSON.stringify(chunk));
    for (const parts of cuts(bytes)) {
      const { pieces, skeleton } = scan(parts);
      expect(pieces).toEqual([]);
      expect(JSON.parse(skeleton)).toEqual(chunk);
    }
  });

  test("a megabyte of text in odd-sized pieces comes back whole", () => {
    const text = `${'ünïcødé 🗼 \\ " '.repeat(40_000)}end`;
    const bytes = enc.encode(JSON.stringify({ choices: [{ index: 0, delta: { content: text } }] }));
    const parts: Uint8Array[] = [];
    for (let at = 0, step = 1; at < bytes.length; at += step, step = (step * 7 + 3) % 9973) {
      parts.push(bytes.subarray(at, at + step));
    }
    const { pieces, skeleton } = scan(parts);
    checkPieces(pieces);
    expect(received(pieces, "text")).toBe(text);
    expect(JSON.parse(skeleton)).toEqual({ choices: [{ index: 0, delta: { content: "" } }] });
  });
});
