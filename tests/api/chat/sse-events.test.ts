/**
 * SseEvents against the reference parser (eventsource-parser, which the stream used before):
 * the same events for every input, whole, split at every byte offset and byte by byte; and a
 * data line past `bigLineBytes` handed over as it comes, never held.
 */
import { describe, expect, test } from "bun:test";
import { createParser } from "eventsource-parser";
import { type BigLine, MAX_OTHER_LINE_BYTES, SseEvents } from "../../../src/api/chat/sse-events.ts";

const enc = new TextEncoder();
type Ev = [string, string | undefined];

/** What the stream did before: TextDecoder (which drops a leading BOM), then the parser. */
function reference(text: string): Ev[] {
  const out: Ev[] = [];
  const p = createParser({ onEvent: (e) => out.push([e.data, e.event]) });
  p.feed(new TextDecoder().decode(enc.encode(text)));
  p.reset({ consume: true });
  return out;
}

function ours(parts: Uint8Array[], bigLineBytes = 1 << 30, big?: () => BigLine): Ev[] {
  const out: Ev[] = [];
  const s = new SseEvents({
    onEvent: (data, name) => out.push([data, name]),
    bigLineBytes,
    bigLine: big ?? (() => ({ feed: () => {}, end: () => "", held: 0 })),
  });
  for (const p of parts) s.feed(p);
  s.end();
  return out;
}

const splits = (bytes: Uint8Array) => {
  const all: Uint8Array[][] = [[bytes], Array.from(bytes, (_, i) => bytes.subarray(i, i + 1))];
  for (let k = 1; k < bytes.length; k++) all.push([bytes.subarray(0, k), bytes.subarray(k)]);
  return all;
};

describe("the same events as the reference parser, however the bytes are cut", () => {
  test.each([
    ["plain", 'data: {"a":1}\n\ndata: [DONE]\n\n'],
    ["CRLF and bare CR", "data: a\r\n\r\ndata: b\r\rdata: c\n\r\n"],
    ["no space, two spaces", "data:x\n\ndata:  y\n\n"],
    [
      "multi-line data, event names, comments, id, retry",
      "event: error\nid: 1\nretry: 5\n: hi\ndata: a\ndata: b\n\n",
    ],
    [
      "an empty event name, an unknown field, a line with no colon",
      "event:\nfoo: bar\ndata\n\ndata: z\n\n",
    ],
    ["a byte order mark", "\ufeffdata: bom\n\n"],
    ["UTF-8 of every length", "data: Zürich € 🗼\n\n"],
    ["an event left open at the end is dropped", "data: kept\n\ndata: dropped\n"],
    ["an unfinished last line", "data: kept\n\ndata: cut"],
  ])("%s", (_name, text) => {
    const want = reference(text);
    for (const parts of splits(enc.encode(text))) expect(ours(parts)).toEqual(want);
  });
});

describe("a data line past bigLineBytes", () => {
  /** Collects what it is fed; stands for the line with a marker. */
  const collector = () => {
    const got: Uint8Array[] = [];
    let ended = 0;
    return {
      got,
      ended: () => ended,
      make: () => ({
        feed: (b: Uint8Array) => void got.push(Uint8Array.from(b)),
        end: () => {
          ended++;
          return "BIG";
        },
        held: 0,
      }),
    };
  };

  test("unfinished past the limit, it goes to the BigLine as it comes; what that returns stands for it", () => {
    const payload = "x".repeat(40);
    const text = `event: e\ndata: ${payload}\r\ndata: tail\n\ndata: small\n\n`;
    let wentBig = 0;
    for (const parts of splits(enc.encode(text))) {
      const c = collector();
      const events = ours(parts, 16, c.make);
      // A line that arrives whole within one chunk is parsed whole, however long.
      const line = c.ended() === 1 ? "BIG" : payload;
      expect(events).toEqual([
        [`${line}\ntail`, "e"],
        ["small", undefined],
      ]);
      if (c.ended() === 1) {
        wentBig++;
        expect(new TextDecoder().decode(Buffer.concat(c.got))).toBe(payload);
      }
    }
    // Byte by byte, and every split that cuts the payload past its 16th byte.
    expect(wentBig).toBeGreaterThan(20);
  });

  test("only the first data line of an event, and only data lines, go big", () => {
    const long = "y".repeat(40);
    const text = `data: a\ndata: ${long}\n\n: ${long}\n\n`;
    const c = collector();
    const bytes = enc.encode(text);
    const parts = Array.from({ length: Math.ceil(bytes.length / 5) }, (_, i) =>
      bytes.subarray(i * 5, i * 5 + 5),
    );
    expect(ours(parts, 16, c.make)).toEqual(reference(text));
    expect(c.ended()).toBe(0);
  });
});

describe("a line that means nothing to qm is not held past MAX_OTHER_LINE_BYTES", () => {
  const chunked = (text: string, size: number) => {
    const bytes = enc.encode(text);
    const parts: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
    return parts;
  };

  test("a comment or an event: line far past the bound is dropped to its end; what follows parses", () => {
    const huge = "x".repeat(MAX_OTHER_LINE_BYTES * 4);
    for (const [lead, end] of [
      [": ", "\n"],
      ["event: ", "\r\n"],
      ["id: ", "\r"],
    ] as const) {
      const text = `data: 1\n\n${lead}${huge}${end}data: 2\n\n: short\n\n`;
      for (const size of [1000, 4096, MAX_OTHER_LINE_BYTES + 7]) {
        const comments: string[] = [];
        const events: Ev[] = [];
        const s = new SseEvents({
          onEvent: (data, name) => events.push([data, name]),
          onComment: (c) => comments.push(c),
          bigLineBytes: 1 << 30,
          bigLine: () => ({ feed: () => {}, end: () => "", held: 0 }),
        });
        for (const p of chunked(text, size)) s.feed(p);
        s.end();
        expect(events).toEqual([
          ["1", undefined],
          ["2", undefined],
        ]);
        expect(comments).toEqual(["short"]);
      }
    }
  });

  test("a comment under the bound is kept whole, however it is cut", () => {
    const text = `: ${"y".repeat(MAX_OTHER_LINE_BYTES - 10)}\ndata: 3\n\n`;
    const comments: string[] = [];
    const s = new SseEvents({
      onEvent: () => {},
      onComment: (c) => comments.push(c),
      bigLineBytes: 16,
      bigLine: () => ({ feed: () => {}, end: () => "", held: 0 }),
    });
    for (const p of chunked(text, 999)) s.feed(p);
    expect(comments).toHaveLength(1);
    expect(comments[0]).toHaveLength(MAX_OTHER_LINE_BYTES - 10);
  });
});
