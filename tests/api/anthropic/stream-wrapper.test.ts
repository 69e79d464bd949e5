/**
 * The stream wrapper around the translator: server-shaped fixtures replayed at every split,
 * pings while the upstream is silent, refusals after the 200, and client cancellation.
 */
import { describe, expect, test } from "bun:test";
import { StreamTranslator } from "../../../src/api/anthropic/translate/stream.ts";
import { translatedStream } from "../../../src/api/chat/translated-body.ts";
import { Deadline } from "../../../src/proxy/deadline.ts";
import { QmError } from "../../../src/shared/errors.ts";
import { Sweep } from "../../../src/shared/sweep.ts";
import { FakeTimers } from "../../support/fake-timers.ts";
import { chunk, sseResponse, sseText } from "../../support/openai-answers.ts";
import { build } from "./grammar.ts";
import { encoder, everySplit, OPTS, run } from "./replay.ts";
import { parseEvents, types } from "./support.ts";

describe("server-shaped fixtures (.sse, written from the servers' documented chunk shapes)", () => {
  const fixture = (name: string) => Bun.file(`${import.meta.dir}/fixtures/${name}`).text();

  test("llama.cpp: reasoning_content, a tool call with UTF-8 split args, timings, usage", async () => {
    const { built, toolCalls } = await everySplit(await fixture("llama-cpp-tools.sse"));
    expect(built.message.content).toEqual([
      { type: "thinking", thinking: "The user wants the weather in Zürich.", signature: "" },
      {
        type: "tool_use",
        id: "fA8kq2PzW1cYbN7mR4tE",
        name: "get_weather",
        input: { city: "Zürich" },
      },
    ]);
    expect(built.message.stop_reason).toBe("tool_use");
    expect(built.message.usage).toEqual({
      input_tokens: 36,
      output_tokens: 24,
      cache_read_input_tokens: 412,
      cache_creation_input_tokens: 0,
    });
    expect(toolCalls).toBe(true);
  });

  test("vLLM: `reasoning`, a matched stop string, cached prompt tokens", async () => {
    const { built } = await everySplit(await fixture("vllm-reasoning.sse"), {
      ...OPTS,
      stopSequences: ["###"],
    });
    expect(built.message.content).toEqual([
      { type: "thinking", thinking: "Short answer is best.", signature: "" },
      { type: "text", text: "Paris is the capital. 🗼" },
    ]);
    expect(built.message).toMatchObject({ stop_reason: "stop_sequence", stop_sequence: "###" });
    expect(built.message.usage).toMatchObject({ input_tokens: 15, cache_read_input_tokens: 16 });
  });
});

describe("the stream wrapper", () => {
  test("pings while the upstream has not answered, then the answer", async () => {
    let answer: (r: Response) => void = () => {};
    const pending = new Promise<Response>((r) => {
      answer = r;
    });
    const ends: boolean[] = [];
    const stream = translatedStream({
      upstream: pending,
      translator: new StreamTranslator(OPTS),
      model: "m",
      pingMs: 5,
      onEnd: (_answered, t) => ends.push(t),
      onCancel: () => {},
    });
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    let text = "";
    // Read until a ping arrived: the upstream is still silent.
    while (!text.includes("event: ping")) text += decoder.decode((await reader.read()).value);
    answer(sseResponse(sseText([chunk({ content: "late" }), chunk({}, "stop")])));
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    const built = build(parseEvents(text));
    expect(built.pings).toBeGreaterThan(0);
    expect(types(parseEvents(text))[0]).toBe("message_start");
    expect(built.message.content).toEqual([{ type: "text", text: "late" }]);
    expect(ends).toEqual([false]);
  });

  test("pings also while headers are in but the first token is not", async () => {
    let push: (s: string) => void = () => {};
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        push = (s) => (s === "" ? c.close() : c.enqueue(encoder.encode(s)));
      },
    });
    const stream = translatedStream({
      upstream: sseResponse(body),
      translator: new StreamTranslator(OPTS),
      model: "m",
      pingMs: 5,
      onEnd: () => {},
      onCancel: () => {},
    });
    push(sseText([chunk({ role: "assistant" })], false));
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes("event: ping")) text += decoder.decode((await reader.read()).value);
    push(sseText([chunk({ content: "x" }), chunk({}, "stop")]));
    push("");
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    expect(build(parseEvents(text)).message.content).toEqual([{ type: "text", text: "x" }]);
  });

  test("an upstream refusal after the 200 and a failed send become error events", async () => {
    const loading = await run(
      new Response(
        JSON.stringify({ error: { message: "Loading model", type: "unavailable_error" } }),
        { status: 503 },
      ),
    );
    expect(build(parseEvents(loading.text)).error?.type).toBe("overloaded_error");
    const overflow = await run(
      new Response(
        JSON.stringify({
          error: {
            code: 400,
            message: "exceeds",
            type: "exceed_context_size_error",
            n_prompt_tokens: 9000,
            n_ctx: 8192,
          },
        }),
        { status: 400 },
      ),
    );
    expect(build(parseEvents(overflow.text)).error).toEqual({
      type: "invalid_request_error",
      message: "prompt is too long: 9000 tokens > 8192 maximum",
    });
    const failed = await run(
      Promise.reject(new QmError("upstream_failed", 'model "m" failed to answer')),
    );
    expect(build(parseEvents(failed.text)).error).toEqual({
      type: "api_error",
      message: 'model "m" failed to answer',
    });
    expect(failed.toolCalls).toBe(false);
  });

  test("a client that goes away cancels the upstream and ends once", async () => {
    let cancelled = false;
    let upstreamCancelled = false;
    let ends = 0;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(encoder.encode(sseText([chunk({ content: "x" })], false)));
      },
      cancel() {
        upstreamCancelled = true;
      },
    });
    const stream = translatedStream({
      upstream: sseResponse(body),
      translator: new StreamTranslator(OPTS),
      model: "m",
      pingMs: 60_000,
      onEnd: () => ends++,
      onCancel: () => {
        cancelled = true;
      },
    });
    const reader = stream.getReader();
    await reader.read();
    await reader.cancel();
    expect(cancelled).toBe(true);
    expect(upstreamCancelled).toBe(true);
    expect(ends).toBe(1);
  });
});

describe("the call's time limits", () => {
  /** An upstream body that sends `first`, then nothing, and fails as fetch does on abort. */
  const silentAfter = (first: string, signal: AbortSignal) =>
    new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(encoder.encode(first));
        signal.addEventListener("abort", () => c.error(signal.reason));
      },
    });

  test("pings go out while the upstream is silent but are no progress: the stall ends it", async () => {
    const timers = new FakeTimers();
    const reports: string[] = [];
    const deadline = new Deadline({
      model: "m",
      firstByteMs: 0,
      stallMs: 1000,
      sweep: new Sweep<Deadline>(timers, 1),
      report: { stalled: () => reports.push("stalled"), answered: () => reports.push("answered") },
    });
    deadline.start();
    deadline.headers();
    const stream = translatedStream({
      upstream: sseResponse(
        silentAfter(sseText([chunk({ content: "x" })], false), deadline.signal),
      ),
      translator: new StreamTranslator(OPTS),
      model: "m",
      pingMs: 5,
      deadline,
      onEnd: () => {},
      onCancel: () => {},
    });
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    let text = "";
    // Two pings: qm has been writing all along, the upstream has not.
    while ((text.match(/event: ping/g) ?? []).length < 2) {
      text += decoder.decode((await reader.read()).value);
    }
    timers.advance(1000);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    const built = build(parseEvents(text));
    expect(built.message.content).toEqual([{ type: "text", text: "x" }]);
    expect(built.error).toEqual({
      type: "timeout_error",
      message: 'model "m" sent nothing for 1 s mid-answer (stall_timeout_s)',
    });
    expect(reports).toEqual(["stalled"]);
  });

  test("a message that completes ends answered", async () => {
    const ends: boolean[] = [];
    const through = (body: string) =>
      new Response(
        translatedStream({
          upstream: sseResponse(body),
          translator: new StreamTranslator(OPTS),
          model: "m",
          pingMs: 60_000,
          onEnd: (answered) => ends.push(answered),
          onCancel: () => {},
        }),
      ).text();
    await through(sseText([chunk({ content: "x" }), chunk({}, "stop")]));
    expect(ends).toEqual([true]);
  });
});
