/**
 * A qm peer's wait status through the Anthropic stream: each upstream `: qm-status` comment
 * reaches the client as the same comment, in its place among the translated events, however
 * the bytes are cut; other comments and over-long ones are dropped.
 */
import { describe, expect, test } from "bun:test";
import { SseEvents } from "../../../src/api/chat/sse-events.ts";
import { RELAYED_COMMENT_BYTES, relayedComment } from "../../../src/shared/sse.ts";
import { chunk, sseResponse } from "../../support/openai-answers.ts";
import { bodyOf, encoder, run } from "./replay.ts";

const data = (o: object) => `data: ${JSON.stringify(o)}\n\n`;
const ANSWER = `${data(chunk({ content: "Hi" }))}: qm-status: between\n\n${data(chunk({}, "stop"))}data: [DONE]\n\n`;
const UPSTREAM = `: qm-status: waiting 1\n\n:qm-status: loading 10%\n\n: keep-alive\n\n${ANSWER}`;

/** Comment lines and event names, in the order the client got them. */
function outline(text: string): string[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith(":") || l.startsWith("event:"))
    .map((l) => (l.startsWith(":") ? l : l.slice(7)));
}

describe("SseEvents' comments", () => {
  const comments = (text: string, onComment?: (c: string) => void) => {
    const got: string[] = [];
    const s = new SseEvents({
      onEvent: (d) => got.push(`data ${d}`),
      ...(onComment ? { onComment } : {}),
      bigLineBytes: 1 << 20,
      bigLine: () => ({ feed: () => {}, end: () => "", held: 0 }),
    });
    const bytes = encoder.encode(text);
    for (let k = 0; k < bytes.length; k++) {
      s.feed(bytes.subarray(k, k + 1));
    }
    s.end();
    return got;
  };

  test("each comment's text (one optional space cut), in order with the events, CR or LF", () => {
    const got: string[] = [];
    const events = comments(": a\r\ndata: 1\n:b\r: c d\n\n", (c) => got.push(c));
    expect(got).toEqual(["a", "b", "c d"]);
    expect(events).toEqual(["data 1"]);
  });

  test("without onComment, comments are dropped as before", () => {
    expect(comments(": a\ndata: 1\n\n")).toEqual(["data 1"]);
  });
});

describe("relayedComment", () => {
  test("qm-status comments only, as the same frame", () => {
    expect(relayedComment("qm-status: loading 42% eta 7s (loading tensors)")).toBe(
      ": qm-status: loading 42% eta 7s (loading tensors)\n\n",
    );
    expect(relayedComment("keep-alive")).toBe("");
    expect(relayedComment(" qm-status: x")).toBe("");
    expect(relayedComment("QM-STATUS: x")).toBe("");
  });

  test("a line of 1 KiB is relayed; one byte more (ASCII or UTF-8) is not", () => {
    const fits = `qm-status: ${"x".repeat(RELAYED_COMMENT_BYTES - 2 - 11)}`;
    expect(relayedComment(fits)).toBe(`: ${fits}\n\n`);
    expect(relayedComment(`${fits}x`)).toBe("");
    // "é" is 2 bytes: the same number of characters is one byte over.
    expect(relayedComment(`${fits.slice(0, -1)}é`)).toBe("");
  });
});

describe("the Anthropic stream relays the wait status", () => {
  test("before message_start when they came first, between events where they were; at every split", async () => {
    const bytes = encoder.encode(UPSTREAM);
    const whole = await run(sseResponse(bodyOf([bytes])));
    expect(outline(whole.text)).toEqual([
      ": qm-status: waiting 1",
      ": qm-status: loading 10%",
      "message_start",
      "content_block_start",
      "content_block_delta",
      ": qm-status: between",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    for (let k = 1; k < bytes.length; k++) {
      const split = await run(sseResponse(bodyOf([bytes.slice(0, k), bytes.slice(k)])));
      if (split.text !== whole.text) expect(`split at ${k}:\n${split.text}`).toBe(whole.text);
    }
    const bytewise = await run(
      sseResponse(bodyOf(Array.from(bytes, (_, i) => bytes.slice(i, i + 1)))),
    );
    expect(bytewise.text).toBe(whole.text);
  });

  test("an over-long qm-status comment and other comments are dropped", async () => {
    const long = `: qm-status: ${"x".repeat(RELAYED_COMMENT_BYTES)}\n\n`;
    const { text } = await run(sseResponse(bodyOf([encoder.encode(`${long}: ping\n\n${ANSWER}`)])));
    expect(outline(text)).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      ": qm-status: between",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(text).not.toContain("xxxx");
  });
});
