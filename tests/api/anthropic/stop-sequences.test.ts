/**
 * `stop_sequences` applied by qm (translate/stop-match.ts): the answer ends just before the
 * first stop sequence its text completes and names it, streamed or not, however the upstream's
 * text is split; and a stream stops reading the upstream at the match.
 */
import { describe, expect, test } from "bun:test";
import { fromOpenAI } from "../../../src/api/anthropic/translate/response.ts";
import { firstMatch, StopMatcher } from "../../../src/api/anthropic/translate/stop-match.ts";
import { chunk, completion, sseResponse, sseText } from "../../support/openai-answers.ts";
import { build } from "./grammar.ts";
import { encoder, everySplit, OPTS, run, tc } from "./replay.ts";
import { parseEvents } from "./support.ts";

/** What a matcher gives for `pieces`: the text let out, and the stop it found. */
function feed(stops: string[], pieces: string[]): { text: string; matched: string | null } {
  const m = new StopMatcher(stops);
  let text = "";
  for (const p of pieces) {
    const out = m.push(p);
    text += out;
    if (m.matched !== null) return { text, matched: m.matched };
  }
  return { text: text + m.flush(), matched: null };
}

/** `text` whole, cut in two at every code unit, and one code unit at a time. */
function splits(text: string): string[][] {
  const out = [[text], text.split("")];
  for (let i = 1; i < text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  return out;
}

describe("StopMatcher", () => {
  const cases: [string, string[], string, string | null][] = [
    ["Hello END world", ["END"], "Hello ", "END"],
    ["no stop here", ["END"], "no stop here", null],
    ["ab", ["abc"], "ab", null],
    ["xxabcx", ["abc", "bc"], "xx", "abc"],
    ["xxbcabc", ["abc", "bc"], "xx", "bc"],
    ["xabc", ["abc", "xabc"], "", "xabc"],
    ["\n\nHuman: hi", ["\n\nHuman:", "\n\nAssistant:"], "", "\n\nHuman:"],
    ["emoji 🗼 then STOP", ["STOP"], "emoji 🗼 then ", "STOP"],
  ];
  for (const [text, stops, out, matched] of cases) {
    test(`${JSON.stringify(text)} with ${JSON.stringify(stops)}, however it is split`, () => {
      for (const pieces of splits(text)) {
        expect({ pieces, got: feed(stops, pieces) }).toEqual({
          pieces,
          got: { text: out, matched },
        });
      }
    });
  }

  test("holds back at most the longest stop's length − 1, and never half a surrogate pair", () => {
    const m = new StopMatcher(["####"]);
    expect(m.push("abcdef")).toBe("abc");
    expect(m.push("g")).toBe("d");
    const e = new StopMatcher(["xy"]);
    // "🗼" is two code units; the hold of 1 would cut it in half, so both wait.
    expect(e.push("a🗼")).toBe("a");
    expect(e.push("b")).toBe("🗼");
    expect(e.flush()).toBe("b");
  });

  test("firstMatch: the stop that ends first, the longer on a tie; empty stops ignored", () => {
    expect(firstMatch("aXYb", ["XYb", "XY"])).toEqual({ stop: "XY", at: 1 });
    expect(firstMatch("aXY", ["Y", "XY"])).toEqual({ stop: "XY", at: 1 });
    expect(firstMatch("abc", ["", "z"])).toBeNull();
  });
});

describe("the translated stream", () => {
  const stream = sseText([
    chunk({ content: "The answer" }),
    chunk({ content: " is 4" }),
    chunk({ content: "2.\n###\nMore" }),
    chunk({ content: " text" }),
    chunk({}, "stop"),
  ]);

  test("ends before the stop sequence and names it, at every split", async () => {
    const { built } = await everySplit(stream, { ...OPTS, stopSequences: ["###", "never"] });
    expect(built.message.content).toEqual([{ type: "text", text: "The answer is 42.\n" }]);
    expect(built.message).toMatchObject({ stop_reason: "stop_sequence", stop_sequence: "###" });
  });

  test("without a match, the held-back text comes out before the end", async () => {
    const { built } = await everySplit(stream, { ...OPTS, stopSequences: ["nowhere to be seen"] });
    expect(built.message.content).toEqual([
      { type: "text", text: "The answer is 42.\n###\nMore text" },
    ]);
    expect(built.message.stop_reason).toBe("end_turn");
  });

  test("a match stops reading the upstream, which is still generating, and drops later calls", async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(encoder.encode(sseText([chunk({ content: "ok STOP" })], false)));
        // Never closes: only the match can end this answer.
      },
      cancel() {
        cancelled = true;
      },
    });
    const { text, toolCalls } = await run(sseResponse(body), { ...OPTS, stopSequences: ["STOP"] });
    const built = build(parseEvents(text));
    expect(built.message.content).toEqual([{ type: "text", text: "ok " }]);
    expect(built.message.stop_sequence).toBe("STOP");
    expect(toolCalls).toBe(false);
    expect(cancelled).toBe(true);
    const withCall = await everySplit(
      sseText([chunk(tc(0, { id: "c", name: "f", args: "{}" })), chunk({ content: "x STOP" })]),
      { ...OPTS, stopSequences: ["STOP"] },
    );
    expect(withCall.built.message.content).toEqual([{ type: "text", text: "x " }]);
  });
});

describe("the whole answer", () => {
  const opts = { ...OPTS, stopSequences: ["###"] };
  test("is cut before the first stop sequence, and names it", async () => {
    const json = await completion({ content: "a\n###\nb" }, "stop").json();
    const msg = fromOpenAI(json, opts);
    expect(msg.content).toEqual([{ type: "text", text: "a\n" }]);
    expect([msg.stop_reason, msg.stop_sequence]).toEqual(["stop_sequence", "###"]);
    const plain = fromOpenAI(await completion({ content: "a b" }, "stop").json(), opts);
    expect([plain.stop_reason, plain.stop_sequence]).toEqual(["end_turn", null]);
  });
});
