/**
 * A qm peer's wait status through the Responses stream: each upstream `: qm-status` comment
 * reaches the client as the same comment, in its place among the events, however the bytes
 * are cut; other comments and over-long ones are dropped; while they come no keep-alive is due.
 */
import { describe, expect, test } from "bun:test";
import { MAX_OTHER_LINE_BYTES } from "../../../src/api/chat/sse-events.ts";
import { Transcoder } from "../../../src/api/chat/transcoder.ts";
import { translatedStream } from "../../../src/api/chat/translated-body.ts";
import { KEEP_ALIVE, ResponsesStream } from "../../../src/api/responses/translate/stream.ts";
import { RELAYED_COMMENT_BYTES } from "../../../src/shared/sse.ts";
import { FakeTimers } from "../../support/fake-timers.ts";
import { chunk } from "../../support/openai-answers.ts";
import { eventsOf, RELAYED, transcode } from "./transcode.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const shape = () => ({ id: "resp_1", model: "m", createdAt: 1, echo: {}, ids: () => "id_1" });
const data = (o: object) => `data: ${JSON.stringify(o)}\n\n`;
const ANSWER = `${data(chunk({ content: "Hi" }))}: qm-status: between\n\n${data(chunk({}, "stop"))}data: [DONE]\n\n`;
const UPSTREAM = `: qm-status: waiting 1\n\n:qm-status: loading 10%\n\n: keep-alive\n\n${ANSWER}`;

const run = (parts: Uint8Array[]) => transcode(parts, shape()).events;
const frames = (parts: Uint8Array[]) => transcode(parts, shape()).text;

/** Comment lines and event names, in the order the client got them. */
const outline = (frames: string) =>
  frames
    .split("\n")
    .filter((l) => l.startsWith(":") || l.startsWith("event:"))
    .map((l) => (l.startsWith(":") ? l : l.slice(7)));

describe("the Responses translator relays the wait status", () => {
  test("in its place among the events, without a sequence number; at every split", () => {
    const bytes = encoder.encode(UPSTREAM);
    const whole = run([bytes]);
    expect(outline(frames([bytes]))).toEqual([
      "response.created",
      "response.in_progress",
      ": qm-status: waiting 1",
      ": qm-status: loading 10%",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      ": qm-status: between",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    // Sequence numbers count the events only.
    const seqs = whole.filter((e) => e.type !== RELAYED).map((e) => e.sequence_number);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    const want = JSON.stringify(whole);
    for (let k = 1; k < bytes.length; k++) {
      const got = JSON.stringify(run([bytes.slice(0, k), bytes.slice(k)]));
      if (got !== want) expect(`split at ${k}: ${got}`).toBe(want);
    }
    expect(JSON.stringify(run(Array.from(bytes, (b) => Uint8Array.of(b))))).toBe(want);
  });

  test("an over-long qm-status comment and other comments are dropped", () => {
    const long = `: qm-status: ${"x".repeat(RELAYED_COMMENT_BYTES)}\n\n`;
    const text = frames([encoder.encode(`${long}: ping\n\n${ANSWER}`)]);
    expect(outline(text).filter((l) => l.startsWith(":"))).toEqual([": qm-status: between"]);
    expect(text).not.toContain("xxxx");
  });
});

describe("the Responses stream wrapper", () => {
  test("response.created at once, then the relayed comments; they hold off the keep-alive", async () => {
    const timers = new FakeTimers();
    let push: (text: string) => void = () => {};
    let close: () => void = () => {};
    const upstream = new Response(
      new ReadableStream<Uint8Array>({
        start(c) {
          push = (text) => c.enqueue(encoder.encode(text));
          close = () => c.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
    const ends: boolean[] = [];
    const reader = translatedStream({
      upstream,
      translator: new ResponsesStream(shape()),
      model: "m",
      pingMs: 1000,
      timers,
      onEnd: (answered) => ends.push(answered),
      onCancel: () => {},
    }).getReader();
    const read = async () => decoder.decode((await reader.read()).value);
    expect(await read()).toStartWith("event: response.created\n");
    timers.advance(900);
    push(": qm-status: loading 10%\n\n");
    expect(await read()).toBe(": qm-status: loading 10%\n\n");
    // 900 ms after the relayed comment: still no keep-alive due.
    timers.advance(900);
    push(": keep-alive from the peer\n\n");
    timers.advance(99);
    push(`${data(chunk({ content: "Hi" }, "stop"))}data: [DONE]\n\n`);
    const answer = await read();
    expect(answer).not.toContain(KEEP_ALIVE);
    expect(answer).not.toContain("from the peer");
    expect(answer).toContain("event: response.output_text.delta");
    close();
    let rest = "";
    for (;;) {
      const step = await reader.read();
      if (step.done) break;
      rest += decoder.decode(step.value);
    }
    expect(outline(answer + rest).at(-1)).toBe("response.completed");
    expect(ends).toEqual([true]);
    expect(timers.pending).toBe(0);
  });
});

describe("an upstream that never ends a line", () => {
  const mib = encoder.encode("x".repeat(2 ** 20));

  test("a comment line is dropped as it comes, never held; the answer goes on", () => {
    const t = new ResponsesStream(shape());
    const x = new Transcoder(t, { model: "m" });
    let text = t.start() + x.feed(encoder.encode(`${data(chunk({ content: "Hi" }))}: `));
    // Far past what any line that means nothing may hold, and none of it kept.
    for (let i = 0; i < 8; i++) text += x.feed(mib);
    expect(8 * 2 ** 20).toBeGreaterThan(MAX_OTHER_LINE_BYTES);
    text += x.feed(encoder.encode(`\n\n${data(chunk({}, "stop"))}data: [DONE]\n\n`));
    text += x.end();
    expect(eventsOf(text).at(-1)?.type).toBe("response.completed");
    expect(text).not.toContain("xxxx");
  });

  test("one event past maxEventBytes held fails the answer once, and nothing more is read", () => {
    const t = new ResponsesStream(shape());
    const x = new Transcoder(t, { model: "m", maxEventBytes: 4 * 2 ** 20 });
    let text = t.start() + x.feed(encoder.encode(`${data(chunk({ content: "Hi" }))}data: a\n`));
    // Many data lines of one event: each short, together too much to hold.
    const line = encoder.encode(`data: ${"y".repeat(2 ** 16)}\n`);
    for (let i = 0; i < 100; i++) text += x.feed(line);
    text += x.feed(encoder.encode(`\n${data(chunk({ content: "late" }, "stop"))}`)) + x.end();
    const failed = eventsOf(text).filter((e) => e.type === "response.failed");
    expect(failed).toHaveLength(1);
    expect(JSON.stringify(failed[0])).toContain("one event of over 4 MiB");
    expect(text).not.toContain("late");
    expect(t.finished).toBe(true);
  });
});
