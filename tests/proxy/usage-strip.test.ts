/**
 * The usage-only event qm asked for on the client's behalf is cut from the stream however the
 * bytes are split; every other event passes exactly as it came.
 */
import { describe, expect, test } from "bun:test";
import { UsageStrip } from "../../src/proxy/usage-strip.ts";
import { chunk, sseText } from "../support/openai-answers.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const USAGE = { prompt_tokens: 12, completion_tokens: 3 };

function run(parts: Uint8Array[]): string {
  const strip = new UsageStrip();
  let out = "";
  for (const p of parts) out += dec.decode(strip.feed(p), { stream: true });
  const held = strip.end();
  if (held) out += dec.decode(held);
  return out;
}

function everySplit(text: string, expected: string): void {
  const bytes = enc.encode(text);
  for (let i = 0; i <= bytes.length; i++) {
    const got = run([bytes.subarray(0, i), bytes.subarray(i)]);
    expect({ split: i, got }).toEqual({ split: i, got: expected });
  }
  for (let i = 1; i < bytes.length; i += 7) {
    const three = run([bytes.subarray(0, i), bytes.subarray(i, i + 5), bytes.subarray(i + 5)]);
    expect({ split: i, three }).toEqual({ split: i, three: expected });
  }
}

describe("UsageStrip", () => {
  const body = [chunk({ role: "assistant", content: "Hi" }), chunk({}, "stop")];

  test("the usage-only event is cut at every split point; the rest is byte for byte", () => {
    everySplit(sseText([...body, { choices: [], usage: USAGE }]), sseText(body));
  });

  test("with spaces and CRLF line ends too", () => {
    const crlf = (s: string) => s.replaceAll("\n", "\r\n");
    const usage = 'data: {"id":"x", "choices": [], "usage": {"prompt_tokens": 1}}\n\n';
    everySplit(crlf(`${sseText(body, false)}${usage}data: [DONE]\n\n`), crlf(sseText(body)));
  });

  test("usage on a chunk that still has choices, a null usage, or the word in the text, all pass", () => {
    const text = sseText([
      chunk({ content: '"usage": {"prompt_tokens": 1}, "choices": []' }),
      chunk({ content: "x" }, null, { usage: null }),
      chunk({}, "stop", { usage: USAGE }),
      'not json "usage" {"choices":[]}',
    ]);
    everySplit(text, text);
  });

  test("a chunk with nothing to change is passed on as the same bytes", () => {
    const strip = new UsageStrip();
    const whole = enc.encode(sseText(body));
    expect(strip.feed(whole)).toBe(whole);
    expect(strip.end()).toBeNull();
  });

  test("only whole events are held, and never past the bound", () => {
    const strip = new UsageStrip();
    const head = enc.encode("data: {");
    expect(strip.feed(head).length).toBe(0);
    const long = enc.encode("x".repeat(70_000));
    // Past the bound the bytes go on: no event that long is a usage event.
    expect(dec.decode(strip.feed(long))).toBe(`data: {${"x".repeat(70_000)}`);
    expect(strip.end()).toBeNull();
  });
});
