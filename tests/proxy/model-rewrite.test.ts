import { describe, expect, test } from "bun:test";
import { ModelRewrite, rewriteWhole } from "../../src/proxy/model-rewrite.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Feeds `chunks` through one rewrite, as a relay does, and returns all that came out. */
function run(name: string, chunks: string[]): string {
  const r = new ModelRewrite(name);
  const out: Uint8Array[] = chunks.map((c) => r.feed(enc.encode(c)));
  const held = r.end();
  if (held) out.push(held);
  return dec.decode(Buffer.concat(out));
}

/** Every way of cutting `text` in two, and into single bytes. */
function splits(text: string): string[][] {
  const bytes = [...text];
  const out = [bytes];
  for (let i = 1; i < text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  return out;
}

const CHUNK = (model: string, content: string) =>
  `data: {"id":"c","object":"chat.completion.chunk","model":${JSON.stringify(model)},"choices":[{"delta":{"content":${JSON.stringify(content)}}}]}\n\n`;

describe("ModelRewrite", () => {
  const cases: [string, string, string][] = [
    ["another name is replaced", CHUNK("/models/x.gguf", "hi"), CHUNK("m", "hi")],
    ["the client's name is left as it is", CHUNK("m", "hi"), CHUNK("m", "hi")],
    ["escapes in the upstream's value are skipped whole", CHUNK('a\\"b"c', "x"), CHUNK("m", "x")],
    [
      "the word in the text is never a field",
      CHUNK("m", 'say "model": "gpt-4"'),
      CHUNK("m", 'say "model": "gpt-4"'),
    ],
    [
      '"model" as a value, or a key without a string value, stays',
      '{"role":"model","model":null,"x":{"model" : 3}}',
      '{"role":"model","model":null,"x":{"model" : 3}}',
    ],
    [
      "whitespace around the colon; every field in a body",
      '{"model" :\n "up","data":[{"model":"up"}]}',
      '{"model" :\n "m","data":[{"model":"m"}]}',
    ],
    ["no field at all", "data: [DONE]\n\n", "data: [DONE]\n\n"],
  ];
  for (const [what, input, expected] of cases) {
    test(`${what}, however the bytes are split`, () => {
      for (const chunks of splits(input)) {
        expect({ chunks, out: run("m", chunks) }).toEqual({ chunks, out: expected });
      }
    });
  }

  test("a stream of whole events: each one after the first is rewritten like the first, whatever it holds", () => {
    const events = [
      CHUNK("/models/x.gguf", "a"),
      CHUNK("/models/x.gguf", "b"),
      // Two events in one chunk: two fields.
      CHUNK("/models/x.gguf", "c") + CHUNK("/models/x.gguf", "d"),
      // Another spacing, another name, the word in the text.
      '{"model" : "/models/x.gguf"}\n\n',
      CHUNK("/models/y.gguf", "e"),
      CHUNK("/models/x.gguf", 'the "model" word'),
      // A key cut at the chunk's end, finished by the next.
      `${CHUNK("/models/x.gguf", "f")}data: {"mod`,
      `el":"/models/x.gguf"}\n\n`,
      "data: [DONE]\n\n",
    ];
    const whole = run("m", [events.join("")]);
    expect(run("m", events)).toBe(whole);
    expect(whole).toBe(events.join("").replaceAll(/"\/models\/[xy]\.gguf"/g, '"m"'));
  });

  test("the upstream's own name is learnt once, from the first field", () => {
    const learnt: string[] = [];
    const r = new ModelRewrite("m", (v) => learnt.push(v.toString()));
    for (const c of [CHUNK("/x.gguf", "a"), CHUNK("/x.gguf", "b"), CHUNK("/y", "c")]) {
      r.feed(enc.encode(c));
    }
    expect(learnt).toEqual(['"/x.gguf"']);
  });

  test("a name that needs escaping goes out as a JSON string", () => {
    expect(run('we"ird', ['{"model":"up"}'])).toBe('{"model":"we\\"ird"}');
  });

  test("an unchanged chunk is passed on as the same bytes, not a copy", () => {
    const r = new ModelRewrite("m");
    const chunk = enc.encode(CHUNK("m", "hi"));
    expect(r.feed(chunk)).toBe(chunk);
  });

  test("rewriteWhole: a body without the field, or already right, is the same bytes", () => {
    const none = enc.encode('{"choices":[]}');
    expect(rewriteWhole(none, "m")).toBe(none);
    const right = enc.encode('{"model":"m"}');
    expect(rewriteWhole(right, "m")).toBe(right);
    expect(dec.decode(rewriteWhole(enc.encode('{"model":"/x.gguf","a":1}'), "m"))).toBe(
      '{"model":"m","a":1}',
    );
  });

  test("a field that never closes is held at most 4 KiB, then passed on as it is", () => {
    const open = `{"model":"${"x".repeat(5000)}`;
    const r = new ModelRewrite("m");
    expect(dec.decode(r.feed(enc.encode(open.slice(0, 100))))).toBe("{");
    expect(dec.decode(r.feed(enc.encode(open.slice(100))))).toBe(open.slice(1));
    expect(r.end()).toBeNull();
  });
});
