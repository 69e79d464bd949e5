import { describe, expect, test } from "bun:test";
import { LineSplitter, pumpLines } from "../../src/process/line-splitter.ts";

function splitAll(chunks: string[], max?: number): string[] {
  const s = new LineSplitter(max);
  return [...chunks.flatMap((c) => s.push(c)), ...s.end()];
}

describe("LineSplitter", () => {
  const text = "loading model\r\nllama_model_loader: 291 tensors\n\nready é ✓\npartial";
  const expected = ["loading model", "llama_model_loader: 291 tensors", "", "ready é ✓", "partial"];

  test("splits on \\n and drops a trailing \\r", () => {
    expect(splitAll([text])).toEqual(expected);
  });

  test("the same lines whatever the chunk boundaries", () => {
    for (let i = 0; i <= text.length; i++) {
      for (let j = i; j <= text.length; j += 7) {
        expect(splitAll([text.slice(0, i), text.slice(i, j), text.slice(j)])).toEqual(expected);
      }
    }
  });

  test("cuts lines longer than the limit", () => {
    expect(splitAll(["abcdefghij\nxy"], 4)).toEqual(["abcd", "efgh", "ij", "xy"]);
    expect(splitAll(["ab", "cd", "ef\n"], 4)).toEqual(["abcd", "ef"]);
  });

  test("no trailing empty line after a final newline", () => {
    expect(splitAll(["a\n"])).toEqual(["a"]);
    expect(splitAll([])).toEqual([]);
  });
});

test("pumpLines decodes UTF-8 split across chunks", async () => {
  const bytes = new TextEncoder().encode("héllo\nwörld");
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      // Split inside the two-byte "é".
      c.enqueue(bytes.slice(0, 2));
      c.enqueue(bytes.slice(2));
      c.close();
    },
  });
  const lines: string[] = [];
  await pumpLines(stream, (l) => lines.push(l));
  expect(lines).toEqual(["héllo", "wörld"]);
});
