/** The thin stream around the translator: keep-alives on a fake clock, failures, one end. */
import { describe, expect, test } from "bun:test";
import { translatedStream } from "../../../src/api/chat/translated-body.ts";
import { ResponsesStream } from "../../../src/api/responses/translate/stream.ts";
import { FakeTimers } from "../../support/fake-timers.ts";
import { chunk, sseResponse, sseText } from "../../support/openai-answers.ts";
import { parseEvents } from "../anthropic/support.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const shape = { id: "resp_1", model: "m", createdAt: 1, echo: {} };

function body(upstream: Response | Promise<Response>, timers = new FakeTimers()) {
  const ends: [boolean, boolean][] = [];
  const stream = translatedStream({
    upstream,
    translator: new ResponsesStream(shape),
    model: "m",
    pingMs: 1000,
    timers,
    onEnd: (answered, toolCalls) => ends.push([answered, toolCalls]),
    onCancel: () => {},
  });
  return { reader: stream.getReader(), ends, timers };
}

async function rest(reader: {
  read(): Promise<{ done: boolean; value?: Uint8Array | undefined }>;
}): Promise<string> {
  let text = "";
  for (;;) {
    const step = await reader.read();
    if (step.done) return text;
    text += decoder.decode(step.value);
  }
}

describe("the stream wrapper", () => {
  test("response.created at once; a keep-alive comment while the upstream is quiet", async () => {
    let answer: (r: Response) => void = () => {};
    const upstream = new Promise<Response>((r) => {
      answer = r;
    });
    const { reader, ends, timers } = body(upstream);
    const first = decoder.decode((await reader.read()).value);
    expect(first).toStartWith("event: response.created\n");
    timers.advance(999);
    timers.advance(1);
    expect(decoder.decode((await reader.read()).value)).toBe(": keep-alive\n\n");
    answer(sseResponse(sseText([chunk({ content: "hi" }, "stop")])));
    const text = first + (await rest(reader));
    expect(parseEvents(text).at(-1)?.event).toBe("response.completed");
    expect(ends).toEqual([[true, false]]);
    expect(timers.pending).toBe(0);
  });

  test("a read that fails mid-stream is response.failed with the cause; the end is not an answer", async () => {
    const upstream = sseResponse(
      new ReadableStream({
        start(c) {
          c.enqueue(encoder.encode(`data: ${JSON.stringify(chunk({ content: "Hal" }))}\n\n`));
        },
        pull(c) {
          c.error(new Error("connection reset"));
        },
      }),
    );
    const { reader, ends } = body(upstream);
    const events = parseEvents(await rest(reader));
    const last = events.at(-1);
    expect(last?.event).toBe("response.failed");
    const response = last?.data.response as Record<string, unknown>;
    expect(response.status).toBe("failed");
    expect(response.error).toMatchObject({ code: "server_error" });
    expect(String((response.error as { message: string }).message)).toContain("mid-answer");
    expect(ends).toEqual([[false, false]]);
  });

  test("an upstream refusal after the 200 and a failed connection are response.failed", async () => {
    const refused = body(Response.json({ error: { message: "no slot" } }, { status: 503 }));
    const r = parseEvents(await rest(refused.reader)).at(-1)?.data.response as {
      error: { message: string };
    };
    expect(r.error.message).toBe('model "m" answered HTTP 503: no slot');
    const failed = body(Promise.reject(new Error("refused")));
    const f = parseEvents(await rest(failed.reader)).at(-1);
    expect(f?.event).toBe("response.failed");
    expect(failed.ends).toHaveLength(1);
  });
});
