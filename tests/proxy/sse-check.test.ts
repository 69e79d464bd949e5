/** The relay's SSE check, fed whole and split at every byte offset: the verdict must not move. */
import { describe, expect, test } from "bun:test";
import { SseCheck } from "../../src/proxy/sse-check.ts";

const enc = new TextEncoder();

/** The first problem the check reports for `bytes` cut into `parts`, or null. */
function verdict(parts: Uint8Array[], requireDone: boolean): string | null {
  const check = new SseCheck(requireDone);
  for (const p of parts) {
    const found = check.feed(p);
    if (found) {
      // What is kept ends exactly with the line that ended the bad event.
      const kept = p.subarray(0, found.keep);
      expect(kept.length === 0 || kept.at(-1) === 10 || kept.at(-1) === 13).toBe(true);
      return found.problem;
    }
  }
  return check.end();
}

/** The verdict on `text` whole, in two parts at every offset, and byte by byte: all equal. */
function everySplit(text: string, requireDone = true): string | null {
  const bytes = enc.encode(text);
  const whole = verdict([bytes], requireDone);
  for (let k = 1; k < bytes.length; k++) {
    const split = verdict([bytes.subarray(0, k), bytes.subarray(k)], requireDone);
    if (split !== whole) expect(`split at ${k}: ${split}`).toBe(`split at ${k}: ${whole}`);
  }
  const bytewise = verdict(
    Array.from(bytes, (_, i) => bytes.subarray(i, i + 1)),
    requireDone,
  );
  expect(bytewise).toBe(whole);
  return whole;
}

const chunk = '{"choices":[{"delta":{"content":"hi"}}]}';

describe("sound streams pass", () => {
  test.each([
    ["plain", `data: ${chunk}\n\ndata: ${chunk}\n\ndata: [DONE]\n\n`],
    ["CRLF", `data: ${chunk}\r\n\r\ndata: [DONE]\r\n\r\n`],
    ["bare CR", `data: ${chunk}\r\rdata: [DONE]\r\r`],
    ["no space after the colon", `data:${chunk}\n\ndata:[DONE]\n\n`],
    [
      "comments, keep-alives, event/id/retry fields",
      `: ping\n\nevent: chunk\nid: 7\nretry: 10\ndata: ${chunk}\n\n: bye\ndata: [DONE]\n\n`,
    ],
    ["JSON split over two data lines", `data: {"a":\ndata: [1]}\n\ndata: [DONE]\n\n`],
    ["an array payload and blanks around it", `data:   [1, 2]  \n\ndata: [DONE]\n\n`],
    ["a byte order mark first", `\ufeffdata: ${chunk}\n\ndata: [DONE]\n\n`],
    ["multi-byte UTF-8 text", `data: {"t":"Zürich 🗼"}\n\ndata: [DONE]\n\n`],
    ["a comment after [DONE]", `data: [DONE]\n\n: end\n`],
  ])("%s", (_name, text) => {
    expect(everySplit(text)).toBeNull();
  });

  test("without requireDone a stream may end after any whole event", () => {
    expect(everySplit(`event: speech.audio.done\ndata: {"type":"done"}\n\n`, false)).toBeNull();
    expect(everySplit("", false)).toBeNull();
  });
});

describe("broken streams are caught", () => {
  test.each([
    ["plain text", `data: ${chunk}\n\ndata: upstream error: out of memory\n\ndata: [DONE]\n\n`],
    ["empty data", `data:\n\ndata: [DONE]\n\n`],
    ["cut-off JSON", `data: {"choices":[{"delta":\n\ndata: [DONE]\n\n`],
    ["HTML", `data: <html>502</html>\n\n`],
    ["[DONE] with more after it", `data: [DONE] now\n\n`],
  ])("not JSON: %s", (_name, text) => {
    expect(everySplit(text)).toBe("sent an event that is not JSON");
  });

  test("the body ends mid-event: a partial line, or data never closed by a blank line", () => {
    expect(everySplit(`data: ${chunk}\n\ndata: {"cho`)).toBe(
      "stream ended unexpectedly (mid-event)",
    );
    expect(everySplit(`data: ${chunk}\n\ndata: [DONE]\n`)).toBe(
      "stream ended unexpectedly (mid-event)",
    );
    expect(everySplit(`data: ${chunk}\n`, false)).toBe("stream ended unexpectedly (mid-event)");
  });

  test("a completions stream that ends without data: [DONE]", () => {
    expect(everySplit(`data: ${chunk}\n\n`)).toBe("stream ended unexpectedly (no data: [DONE])");
    expect(everySplit("")).toBe("stream ended unexpectedly (no data: [DONE])");
    // `[DONE]` inside another field, or a comment, is not the end.
    expect(everySplit(`: [DONE]\n\nevent: [DONE]\n\n`)).toBe(
      "stream ended unexpectedly (no data: [DONE])",
    );
  });
});
