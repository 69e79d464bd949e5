/**
 * The model-name rewrite is decided once per model: the first answer teaches qm what name the
 * upstream answers with; when that is the name the client sent, later answers pass with no
 * rewrite at all, until the model starts again.
 */
import { describe, expect, test } from "bun:test";
import { AnswerNames } from "../../src/proxy/answer-names.ts";
import { Deadline } from "../../src/proxy/deadline.ts";
import { forward } from "../../src/proxy/forward.ts";
import { settle } from "../runtime/fake-server.ts";
import { HEAD, model, runtimeHarness } from "../runtime/harness.ts";

const enc = new TextEncoder();

/** An upstream whose chat stream names the model `says`; counts the chunks it made. */
function upstream(says: string) {
  const made: Uint8Array[] = [];
  const fetch = async () => {
    const chunks = [
      `data: {"model":${JSON.stringify(says)},"choices":[{"delta":{"content":"a"}}]}\n\n`,
      `data: {"model":${JSON.stringify(says)},"choices":[{"delta":{},"finish_reason":"stop"}]}\n\n`,
      "data: [DONE]\n\n",
    ].map((c) => enc.encode(c));
    made.push(...chunks);
    let i = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (i < chunks.length) c.enqueue(chunks[i++] as Uint8Array);
        else c.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  };
  return { made, fetch: fetch as unknown as typeof globalThis.fetch };
}

async function ask(names: AnswerNames, up: ReturnType<typeof upstream>, name: string) {
  const res = await forward({
    base: "http://127.0.0.1:9",
    pathAndQuery: "/v1/chat/completions",
    method: "POST",
    headers: new Headers(),
    body: null,
    answerModel: name,
    call: {
      modelId: "m",
      deadline: new Deadline({ model: "m", firstByteMs: 0, stallMs: 0 }),
      stderrTail: () => [],
      log: undefined,
      observer: null,
      ended: () => {},
      tag: () => {},
      fetch: up.fetch,
      answerNames: names,
    },
  });
  const out: Uint8Array[] = [];
  const reader = res.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    out.push(value);
  }
  return { text: Buffer.concat(out).toString(), out };
}

describe("the model name an upstream answers with", () => {
  test("is learnt from the first answer; an upstream that says the client's name is left alone after", async () => {
    const names = new AnswerNames();
    const up = upstream("qwen");
    expect(names.answers("m", "qwen")).toBe(false);
    const first = await ask(names, up, "qwen");
    expect(first.text).toContain('"model":"qwen"');
    expect(names.answers("m", "qwen")).toBe(true);
    expect(names.answers("m", "other")).toBe(false);
  });

  test("another name is still rewritten in every chunk, and a restart forgets what was learnt", async () => {
    const names = new AnswerNames();
    const up = upstream("/models/q.gguf");
    for (let i = 0; i < 2; i++) {
      const { text } = await ask(names, up, "qwen");
      expect(text.match(/"model":"qwen"/g)?.length).toBe(2);
      expect(text).not.toContain("q.gguf");
    }
    expect(names.answers("m", "qwen")).toBe(false);
    names.learn("m", '"qwen"');
    expect(names.answers("m", "qwen")).toBe(true);
    names.forget("m");
    expect(names.answers("m", "qwen")).toBe(false);
  });
});

describe("the runtime's answer names", () => {
  test("a model's learnt name is forgotten when it starts again", async () => {
    const t = runtimeHarness(`${HEAD}${model("a")}`);
    const lease = await t.up("a");
    t.rt.answerNames.learn("a", '"a"');
    expect(t.rt.answerNames.answers("a", "a")).toBe(true);
    lease.release();
    t.rt.unload("a");
    await settle();
    t.fakes.of("a").stopped();
    await settle();
    expect(t.rt.answerNames.answers("a", "a")).toBe(true);
    await t.up("a");
    expect(t.rt.answerNames.answers("a", "a")).toBe(false);
  });
});
