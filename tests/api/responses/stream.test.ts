/**
 * The streaming translator (chat-completions SSE bytes → Responses events), pure: recorded
 * upstream streams whole, split at every byte boundary and fed a byte at a time.
 */
import { describe, expect, test } from "bun:test";
import { fromChat } from "../../../src/api/responses/translate/response.ts";
import type { ResponsesEvent, StreamShape } from "../../../src/api/responses/translate/stream.ts";
import { feeder, transcode } from "./transcode.ts";

const encoder = new TextEncoder();
const fixture = (name: string) => Bun.file(`${import.meta.dir}/fixtures/${name}`).text();
const anthropicFixture = (name: string) =>
  Bun.file(`${import.meta.dir}/../anthropic/fixtures/${name}`).text();

/** A shape whose item ids count up, so two runs can be compared exactly. */
function shape(): StreamShape {
  let n = 0;
  return {
    id: "resp_1",
    model: "m",
    createdAt: 1,
    echo: {},
    ids: (p) => `${p}_${n++}`,
  };
}

function run(parts: Uint8Array[]) {
  return transcode(parts, shape());
}

/** The events of the whole stream, checked equal when split anywhere and byte by byte. */
function everySplit(text: string): ResponsesEvent[] {
  const bytes = encoder.encode(text);
  const whole = run([bytes]).events;
  const want = JSON.stringify(whole);
  for (let k = 1; k < bytes.length; k++) {
    const got = JSON.stringify(run([bytes.slice(0, k), bytes.slice(k)]).events);
    if (got !== want) expect(`split at ${k}: ${got}`).toBe(want);
  }
  const single = [...bytes].map((b) => Uint8Array.of(b));
  expect(JSON.stringify(run(single).events)).toBe(want);
  return whole;
}

const types = (events: ResponsesEvent[]) => events.map((e) => e.type);

/** The grammar every stream keeps: sequence numbers 0, 1, 2…; items added before use, closed once. */
function checkGrammar(events: ResponsesEvent[]) {
  events.forEach((e, i) => {
    expect(e.sequence_number).toBe(i);
  });
  expect(types(events).slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
  const open = new Set<number>();
  const closed = new Set<number>();
  let next = 0;
  for (const e of events.slice(2, -1)) {
    const index = e.output_index as number;
    if (e.type === "response.output_item.added") {
      expect(index).toBe(next++);
      open.add(index);
    } else {
      expect(open.has(index)).toBe(true);
      if (e.type === "response.output_item.done") {
        open.delete(index);
        closed.add(index);
      }
    }
  }
  expect(open.size).toBe(0);
  expect(closed.size).toBe(next);
  const last = events.at(-1) as ResponsesEvent;
  expect(["response.completed", "response.incomplete", "response.failed"]).toContain(last.type);
}

const final = (events: ResponsesEvent[]) =>
  (events.at(-1) as ResponsesEvent).response as Record<string, unknown>;

describe("streamed answers", () => {
  test("text (CRLF, multi-byte UTF-8 across splits); usage with cached tokens", async () => {
    const events = everySplit(await fixture("text.sse"));
    checkGrammar(events);
    expect(types(events)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events[7]).toMatchObject({ item_id: "msg_0", content_index: 0, text: "Grüß dich 👋!" });
    const r = final(events);
    expect(r.status).toBe("completed");
    expect(r.usage).toEqual({
      input_tokens: 20,
      input_tokens_details: { cached_tokens: 8 },
      output_tokens: 4,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 24,
    });
  });

  test("reasoning then text: a reasoning item with its summary, then the message", async () => {
    const events = everySplit(await fixture("reasoning-text.sse"));
    checkGrammar(events);
    expect(types(events).slice(2, 9)).toEqual([
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
    ]);
    const r = final(events);
    expect(r.output).toEqual([
      {
        type: "reasoning",
        id: "rs_0",
        summary: [{ type: "summary_text", text: "The user greets me." }],
      },
      expect.objectContaining({ type: "message", id: "msg_1", status: "completed" }),
    ]);
    expect((r.usage as Record<string, unknown>).output_tokens_details).toEqual({
      reasoning_tokens: 7,
    });
    // vLLM names the field `reasoning`.
    const vllm = everySplit(await anthropicFixture("vllm-reasoning.sse"));
    expect((final(vllm).output as { type: string }[]).map((o) => o.type)).toEqual([
      "reasoning",
      "message",
    ]);
  });

  test("one tool call (llama.cpp, after reasoning): one function_call item, arguments streamed", async () => {
    const events = everySplit(await anthropicFixture("llama-cpp-tools.sse"));
    checkGrammar(events);
    const call = events.filter((e) => e.type === "response.function_call_arguments.done");
    expect(call).toEqual([
      expect.objectContaining({
        output_index: 1,
        name: "get_weather",
        arguments: '{"city":"Zürich"}',
      }),
    ]);
    const deltas = events.filter((e) => e.type === "response.function_call_arguments.delta");
    expect(deltas.map((e) => e.delta).join("")).toBe('{"city":"Zürich"}');
    const r = final(events);
    expect(r.output).toContainEqual(
      expect.objectContaining({
        type: "function_call",
        status: "completed",
        call_id: "fA8kq2PzW1cYbN7mR4tE",
        name: "get_weather",
        arguments: '{"city":"Zürich"}',
      }),
    );
    expect(run([encoder.encode(await anthropicFixture("llama-cpp-tools.sse"))]).t.toolCalls).toBe(
      true,
    );
  });

  test("two parallel tool calls with interleaved fragments: two items, each its own arguments", async () => {
    const text = await fixture("two-tools.sse");
    const events = everySplit(text);
    checkGrammar(events);
    const added = events.filter((e) => e.type === "response.output_item.added");
    expect(added.map((e) => (e.item as { type: string }).type)).toEqual([
      "message",
      "function_call",
      "function_call",
    ]);
    const byItem = (id: string) =>
      events
        .filter((e) => e.type === "response.function_call_arguments.delta" && e.item_id === id)
        .map((e) => e.delta)
        .join("");
    expect(byItem("fc_1")).toBe('{"city":"Zürich"}');
    expect(byItem("fc_2")).toBe('{"tz":"UTC"}');
    const r = final(events);
    expect((r.output as Record<string, unknown>[]).slice(1)).toEqual([
      {
        type: "function_call",
        id: "fc_1",
        status: "completed",
        call_id: "call_a",
        name: "get_weather",
        arguments: '{"city":"Zürich"}',
      },
      {
        type: "function_call",
        id: "fc_2",
        status: "completed",
        call_id: "call_b",
        name: "get_time",
        arguments: '{"tz":"UTC"}',
      },
    ]);
  });

  test("a length finish ends in response.incomplete with max_output_tokens", async () => {
    const events = everySplit(await fixture("length.sse"));
    checkGrammar(events);
    const r = final(events);
    expect(events.at(-1)?.type).toBe("response.incomplete");
    expect(r.status).toBe("incomplete");
    expect(r.incomplete_details).toEqual({ reason: "max_output_tokens" });
  });

  test("the streamed final Response is the one the same answer gets whole", async () => {
    const events = everySplit(await fixture("two-tools.sse"));
    const streamed = final(events);
    const whole = fromChat(
      {
        choices: [
          {
            message: {
              content: "Checking.",
              tool_calls: [
                { id: "call_a", function: { name: "get_weather", arguments: '{"city":"Zürich"}' } },
                { id: "call_b", function: { name: "get_time", arguments: '{"tz":"UTC"}' } },
              ],
            },
            finish_reason: "tool_calls",
          },
        ],
        usage: { prompt_tokens: 50, completion_tokens: 20 },
      },
      shape(),
    );
    const noIds = (r: Record<string, unknown>) =>
      JSON.parse(JSON.stringify(r).replace(/"(msg|fc|rs)_[0-9a-f]+"/g, '"$1_X"'));
    expect(noIds(streamed)).toEqual(noIds(whole));
  });
});

test("a call of a function from a namespace tool names its namespace, streamed and whole", () => {
  const namespaces = new Map([["get_time", "clock"]]);
  const text = [
    'data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"get_time","arguments":"{}"}}]}}]}',
    'data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}',
    "data: [DONE]",
    "",
  ].join("\n\n");
  const t = feeder({ ...shape(), namespaces });
  const events = [...t.chunk(encoder.encode(text)), ...t.end()];
  const added = events.find((e) => e.type === "response.output_item.added");
  expect(added?.item).toMatchObject({ name: "get_time", namespace: "clock" });
  expect((final(events).output as Record<string, unknown>[])[0]?.namespace).toBe("clock");
  const whole = fromChat(
    {
      choices: [
        {
          message: { tool_calls: [{ id: "c1", function: { name: "get_time", arguments: "{}" } }] },
          finish_reason: "tool_calls",
        },
      ],
    },
    { ...shape(), namespaces },
  );
  expect((whole.output as Record<string, unknown>[])[0]?.namespace).toBe("clock");
  // Functions outside a namespace carry none.
  const plain = fromChat(
    {
      choices: [
        { message: { tool_calls: [{ id: "c2", function: { name: "other", arguments: "{}" } }] } },
      ],
    },
    { ...shape(), namespaces },
  );
  expect((plain.output as Record<string, unknown>[])[0]).not.toHaveProperty("namespace");
});

describe("endings that are not answers", () => {
  const t = () => feeder(shape());
  test("a body that ends before its finish reason fails", () => {
    const s = t();
    const events = [
      ...s.chunk(encoder.encode('data: {"choices":[{"delta":{"content":"par"}}]}\n\n')),
      ...s.end(),
    ];
    expect(events.at(-1)?.type).toBe("response.failed");
    expect(final(events).error).toMatchObject({ code: "server_error" });
    expect(s.t.ending).toBe("failed");
  });

  test("an upstream error event mid-stream fails with its message; nothing follows", () => {
    const s = t();
    const events = s.chunk(
      encoder.encode(
        'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: {"error":{"message":"boom"}}\n\n' +
          'data: {"choices":[{"delta":{"content":"b"}}]}\n\n',
      ),
    );
    expect(events.at(-1)?.type).toBe("response.failed");
    expect(final(events).error).toEqual({ code: "server_error", message: "boom" });
    expect(s.end()).toEqual([]);
    expect(s.fail("later")).toEqual([]);
  });

  test("a body that ends on [DONE] without its blank line completes; a cut line is skipped", () => {
    const s = t();
    const finish = 'data: {"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}\n\n';
    expect([...s.chunk(encoder.encode(`${finish}data: [DONE]`)), ...s.end()].at(-1)?.type).toBe(
      "response.completed",
    );
    const cut = t();
    const events = [
      ...cut.chunk(encoder.encode('data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: {"cho')),
      ...cut.end(),
    ];
    expect(events.at(-1)?.type).toBe("response.failed");
  });

  test("odd lines are skipped; [DONE] after a finish completes without waiting for the end", () => {
    const s = t();
    const events = s.chunk(
      encoder.encode(
        ': comment\n\ndata: not json\n\ndata: {"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
      ),
    );
    expect(events.at(-1)?.type).toBe("response.completed");
    expect(s.t.finished).toBe(true);
  });
});

describe("what a response reports of its output", () => {
  const line = (delta: object, finish: string | null = null, extra: object = {}) =>
    `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  const thinking = ["Let", " me", " think", " about", " it"].map((t) =>
    line({ reasoning_content: t }),
  );

  test("reasoning_tokens: the upstream's when it gives them, else its reasoning chunks", () => {
    const usage = { prompt_tokens: 9, completion_tokens: 5 };
    // llama.cpp: a whole answer of reasoning, usage without details.
    const llama = run([
      encoder.encode(
        `${thinking.join("")}${line({}, "stop")}${line({}, null, { usage })}data: [DONE]\n\n`,
      ),
    ]);
    expect((final(llama.events).usage as Record<string, unknown>).output_tokens_details).toEqual({
      reasoning_tokens: 5,
    });
    const vllmUsage = { ...usage, completion_tokens_details: { reasoning_tokens: 4 } };
    const vllm = run([
      encoder.encode(
        `${thinking.join("")}${line({}, "stop")}${line({}, null, { usage: vllmUsage })}data: [DONE]\n\n`,
      ),
    ]);
    expect((final(vllm.events).usage as Record<string, unknown>).output_tokens_details).toEqual({
      reasoning_tokens: 4,
    });
  });

  test("a whole answer's reasoning is estimated from its text, never above its output", () => {
    const answer = (completion_tokens: number) =>
      fromChat(
        {
          choices: [
            {
              message: { reasoning_content: "Let me think about it carefully", content: "Hi" },
              finish_reason: "stop",
            },
          ],
          usage: { prompt_tokens: 9, completion_tokens },
        },
        shape(),
      ).usage as { output_tokens_details: { reasoning_tokens: number } };
    const reasoning = answer(40).output_tokens_details.reasoning_tokens;
    expect(reasoning).toBeGreaterThanOrEqual(6);
    expect(reasoning).toBeLessThan(40);
    expect(answer(3).output_tokens_details.reasoning_tokens).toBe(3);
  });

  test("an upstream that dies mid-answer: response.failed carries the items and usage so far", () => {
    const s = feeder(shape());
    const call = (args: string, first = false) =>
      line({
        tool_calls: [
          {
            index: 0,
            ...(first ? { id: "call_x", type: "function" } : {}),
            function: { ...(first ? { name: "exec_command" } : {}), arguments: args },
          },
        ],
      });
    const events = [
      ...s.chunk(
        encoder.encode(
          `${thinking.join("")}${line({ content: "I will" })}${line({ content: " run it" })}` +
            `${call('{"cmd":', true)}${call('"ls')}`,
        ),
      ),
      ...s.end(),
    ];
    expect(events.at(-1)?.type).toBe("response.failed");
    const r = final(events);
    expect(r.status).toBe("failed");
    expect(r.output).toEqual([
      {
        type: "reasoning",
        id: "rs_0",
        summary: [{ type: "summary_text", text: "Let me think about it" }],
      },
      {
        type: "message",
        id: "msg_1",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "I will run it", annotations: [], logprobs: [] }],
      },
      {
        type: "function_call",
        id: "fc_2",
        status: "incomplete",
        call_id: "call_x",
        name: "exec_command",
        arguments: '{"cmd":"ls',
      },
    ]);
    expect(r.usage).toMatchObject({
      output_tokens: 9,
      output_tokens_details: { reasoning_tokens: 5 },
    });
  });

  test("cut inside the text: the open message keeps its text, incomplete", () => {
    const s = feeder(shape());
    const events = [
      ...s.chunk(encoder.encode(`${line({ content: "Hello" })}${line({ content: " wor" })}`)),
      ...s.end(),
    ];
    const r = final(events);
    expect(r.output).toEqual([
      {
        type: "message",
        id: "msg_0",
        status: "incomplete",
        role: "assistant",
        content: [{ type: "output_text", text: "Hello wor", annotations: [], logprobs: [] }],
      },
    ]);
    expect((r.usage as Record<string, unknown>).output_tokens).toBe(2);
  });
});
