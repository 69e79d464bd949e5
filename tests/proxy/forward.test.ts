import { afterAll, describe, expect, test } from "bun:test";
import { Deadline } from "../../src/proxy/deadline.ts";
import { forward } from "../../src/proxy/forward.ts";

// A local upstream on port 0 that answers with the content type the path names, in two pieces.
// The second piece waits for `gate` — opened by the test once it has read the first piece
// (or at once, for a body qm must take whole) — so a relayed body arrives in exactly two reads.
let gate: Promise<void> = Promise.resolve();
let open = () => {};
const upstream = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(req) {
    const type = decodeURIComponent(new URL(req.url).pathname.slice(1));
    const enc = new TextEncoder();
    let step = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (step === 0) c.enqueue(enc.encode(type.includes("ndjson") ? '{"a":1}\n' : '{"a":'));
        else if (step === 1) {
          await gate;
          c.enqueue(enc.encode(type.includes("ndjson") ? '{"b":2}\n' : "1}"));
        } else c.close();
        step++;
      },
    });
    return new Response(body, { headers: { "content-type": type } });
  },
});
afterAll(() => upstream.stop(true));

async function through(type: string, gated: boolean) {
  gate = gated
    ? new Promise<void>((resolve) => {
        open = resolve;
      })
    : Promise.resolve();
  const ends: string[] = [];
  const res = await forward({
    base: `http://127.0.0.1:${upstream.port}`,
    pathAndQuery: `/${encodeURIComponent(type)}`,
    method: "GET",
    headers: new Headers(),
    body: null,
    call: {
      modelId: "m",
      deadline: new Deadline({ model: "m", firstByteMs: 0, stallMs: 0 }),
      stderrTail: () => [],
      log: undefined,
      observer: null,
      ended: (e) => ends.push(e.kind),
      tag: () => {},
    },
  });
  const reader = res.body!.getReader();
  let reads = 0;
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    reads++;
    text += new TextDecoder().decode(value);
    open();
  }
  return { reads, text, ends };
}

describe("forward", () => {
  test("a whole JSON answer is taken in one piece and the end reported once", async () => {
    for (const type of [
      "application/json",
      "application/json; charset=utf-8",
      "application/problem+json",
    ]) {
      const r = await through(type, false);
      expect(r).toEqual({ reads: 1, text: '{"a":1}', ends: ["done"] });
    }
  });

  test("line-delimited JSON streams through as it comes", async () => {
    const r = await through("application/x-ndjson", true);
    expect(r.reads).toBe(2);
    expect(r.text).toBe('{"a":1}\n{"b":2}\n');
    expect(r.ends).toEqual(["done"]);
  });
});
