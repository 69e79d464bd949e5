/**
 * The one body of the translated streams, for each of the three APIs: the same text however
 * the upstream's bytes are split (every byte offset, reporting the split that failed), one end
 * with how the answer ended, and the big-line policy alike for all three.
 */
import { describe, expect, test } from "bun:test";
import { chunk, sseText } from "../../support/openai-answers.ts";
import { APIS, type Api, through } from "./three-apis.ts";

const enc = new TextEncoder();
const fixture = (dir: string, name: string) =>
  Bun.file(`${import.meta.dir}/../${dir}/fixtures/${name}`).text();

const UPSTREAMS: [string, () => Promise<string>][] = [
  [
    "llama.cpp: reasoning, a tool call, timings, usage",
    () => fixture("anthropic", "llama-cpp-tools.sse"),
  ],
  [
    "vLLM: reasoning, a stop string, cached tokens",
    () => fixture("anthropic", "vllm-reasoning.sse"),
  ],
  ["two parallel tool calls, interleaved", () => fixture("responses", "two-tools.sse")],
  ["text in CRLF, multi-byte UTF-8", () => fixture("responses", "text.sse")],
  [
    "a qm peer's wait status, comments, odd lines, an error mid-answer",
    async () =>
      ": qm-status: loading 10%\n\n: keep-alive\n\ndata: not json\n\n" +
      sseText([chunk({ content: "Hé" }), { error: { message: "boom" } }], false),
  ],
];

describe("the same text however the upstream's bytes are split", () => {
  for (const api of APIS) {
    test.each(UPSTREAMS)(`${api}: %s`, async (_name, text) => {
      const bytes = enc.encode(await text());
      const whole = await through(api, [bytes]);
      expect(whole.ends).toHaveLength(1);
      for (let i = 1; i < bytes.length; i++) {
        const got = await through(api, [bytes.subarray(0, i), bytes.subarray(i)]);
        expect({ split: i, got }).toEqual({ split: i, got: whole });
      }
    });
  }
});

describe("how the answer ended, told once", () => {
  const answer = sseText([chunk({ content: "x" }), chunk({}, "stop")]);
  const calls = sseText([
    chunk({ tool_calls: [{ index: 0, id: "c", function: { name: "f", arguments: "{}" } }] }),
    chunk({}, "tool_calls"),
  ]);
  const cut = sseText([chunk({ content: "x" })], false);
  const expected: Record<Api, [boolean, boolean][][]> = {
    anthropic: [[[true, false]], [[true, true]], [[true, false]], [[false, false]]],
    responses: [[[true, false]], [[true, true]], [[true, false]], [[false, false]]],
    ollama: [[[true, false]], [[true, true]], [[true, false]], [[false, false]]],
  };
  test.each(APIS)("%s: answered, with tool calls, cut (the body ended), broken", async (api) => {
    const got = [
      (await through(api, [enc.encode(answer)])).ends,
      (await through(api, [enc.encode(calls)])).ends,
      (await through(api, [enc.encode(cut)])).ends,
      (await through(api, [enc.encode(cut)], { fail: new Error("reset") })).ends,
    ];
    expect(got).toEqual(expected[api]);
  });
});

describe("one big-line policy for every API", () => {
  const piece = 'Zürich 🗼 "quoted" \\ \n';
  const big = piece.repeat(Math.ceil((1 << 20) / piece.length));
  /** The text the client got, whatever the API's shape. */
  const said: Record<Api, (text: string) => string> = {
    anthropic: (t) =>
      t
        .split("\n")
        .filter((l) => l.startsWith("data: ") && l.includes('"text_delta"'))
        .map((l) => JSON.parse(l.slice(6)).delta.text)
        .join(""),
    responses: (t) =>
      t
        .split("\n")
        .filter((l) => l.startsWith("data: ") && l.includes('"response.output_text.delta"'))
        .map((l) => JSON.parse(l.slice(6)).delta)
        .join(""),
    ollama: (t) =>
      t
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l).message?.content ?? "")
        .join(""),
  };

  test.each(
    APIS,
  )("%s: a 1 MiB delta in odd pieces streams through whole, in order", async (api) => {
    const bytes = enc.encode(sseText([chunk({ content: big }), chunk({ content: "!" }, "stop")]));
    const parts: Uint8Array[] = [];
    for (let at = 0, step = 1000; at < bytes.length; at += step, step = (step * 13 + 7) % 70_001) {
      parts.push(bytes.subarray(at, at + step));
    }
    const { text, ends } = await through(api, parts);
    expect(said[api](text)).toBe(`${big}!`);
    expect(ends).toEqual([[true, false]]);
  });

  test.each(
    APIS,
  )("%s: one event past the bound fails the answer once; nothing after is read", async (api) => {
    // A tool call's arguments are held whole (they go out whole): past the bound, no more.
    const args = JSON.stringify({ file: "z".repeat(3 << 20) });
    const text = sseText([
      chunk({ content: "a" }),
      chunk({ tool_calls: [{ index: 0, id: "c", function: { name: "write", arguments: args } }] }),
      chunk({ content: "late" }, "stop"),
    ]);
    const { text: out, ends } = await through(api, [enc.encode(text)], { maxEventBytes: 1 << 20 });
    expect(out).toContain("one event of over 1 MiB");
    expect(out).not.toContain("late");
    expect(out.split("one event of over").length).toBe(2);
    expect(ends).toEqual([[false, false]]);
  });
});
