/**
 * The three translators read the upstream's stream one way, because one reader
 * (`api/chat/chunk.ts`) reads it for all of them. Each case below is one the translators once
 * read differently; each runs the same upstream bytes through all three.
 */
import { describe, expect, test } from "bun:test";
import { chunk, sseText } from "../../support/openai-answers.ts";
import { APIS, type Api, through } from "./three-apis.ts";

const enc = new TextEncoder();

/** What the client was told: its text, its reasoning, and whether the answer failed, and how. */
interface Told {
  text: string;
  reasoning: string;
  failed: string | null;
}

function told(api: Api, out: string): Told {
  const t: Told = { text: "", reasoning: "", failed: null };
  if (api === "ollama") {
    for (const line of out.split("\n").filter((l) => l !== "")) {
      const o = JSON.parse(line);
      if (o.error !== undefined) t.failed = o.error;
      t.text += o.message?.content ?? "";
      t.reasoning += o.message?.thinking ?? "";
    }
    return t;
  }
  for (const line of out.split("\n").filter((l) => l.startsWith("data: "))) {
    const e = JSON.parse(line.slice(6));
    if (e.type === "content_block_delta" && e.delta.type === "text_delta") t.text += e.delta.text;
    if (e.type === "content_block_delta" && e.delta.type === "thinking_delta") {
      t.reasoning += e.delta.thinking;
    }
    if (e.type === "error") t.failed = e.error.message;
    if (e.type === "response.output_text.delta") t.text += e.delta;
    if (e.type === "response.reasoning_summary_text.delta") t.reasoning += e.delta;
    if (e.type === "response.failed") t.failed = e.response.error.message;
  }
  return t;
}

async function all(upstream: string): Promise<Record<Api, Told>> {
  const out = {} as Record<Api, Told>;
  for (const api of APIS) out[api] = told(api, (await through(api, [enc.encode(upstream)])).text);
  return out;
}

const alike = (t: Told) => ({ anthropic: t, responses: t, ollama: t });

describe("the three APIs read the upstream's stream alike", () => {
  test("[DONE] with whitespace around it ends the answer; nothing after it is read", async () => {
    const upstream =
      sseText([chunk({ content: "x" }, "stop")], false) +
      "data:  [DONE] \n\n" +
      sseText([chunk({ content: "late" }, "stop")]);
    expect(await all(upstream)).toEqual(alike({ text: "x", reasoning: "", failed: null }));
  });

  test("an empty reasoning_content says nothing: the reasoning field is read", async () => {
    const upstream = sseText([
      chunk({ reasoning_content: "", reasoning: "thought" }),
      chunk({ content: "said" }, "stop"),
    ]);
    expect(await all(upstream)).toEqual(
      alike({ text: "said", reasoning: "thought", failed: null }),
    );
  });

  test("an event named error ends the answer with its message; nothing after it is read", async () => {
    const upstream =
      sseText([chunk({ content: "a" })], false) +
      'event: error\ndata: {"message":"Loading model"}\n\n' +
      sseText([chunk({ content: "late" }, "stop")]);
    expect(await all(upstream)).toEqual(
      alike({ text: "a", reasoning: "", failed: "Loading model" }),
    );
  });

  test('finish_reason "" is not a finish: a body cut after it fails', async () => {
    const upstream = sseText(
      [chunk({ content: "a" }, ""), { choices: [{ index: 0, delta: {}, finish_reason: "" }] }],
      false,
    );
    const got = await all(upstream);
    for (const api of APIS) {
      expect({ api, text: got[api].text, failed: got[api].failed !== null }).toEqual({
        api,
        text: "a",
        failed: true,
      });
    }
  });
});
