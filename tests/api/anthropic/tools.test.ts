/** Tools and tool_choice (docs/translation.md §3.3). */
import { describe, expect, test } from "bun:test";
import { tr, weather } from "./translate.ts";

describe("tools", () => {
  const two = [weather, { name: "f", input_schema: { type: "object" }, cache_control: {} }];

  test("tool_choice: each type, no tools, parallel calls off", () => {
    const m = [{ role: "user", content: "hi" }];
    expect(tr({ messages: m, tools: two, tool_choice: { type: "auto" } }).tool_choice).toBe("auto");
    expect(tr({ messages: m, tools: two, tool_choice: { type: "any" } }).tool_choice).toBe(
      "required",
    );
    expect(
      tr({ messages: m, tools: two, tool_choice: { type: "tool", name: "f" } }).tool_choice,
    ).toEqual({
      type: "function",
      function: { name: "f" },
    });
    const llama = tr(
      { messages: m, tools: two, tool_choice: { type: "tool", name: "f" } },
      "llamacpp",
    );
    expect(llama.tool_choice).toBe("required");
    expect(llama.tools!.map((t) => t.function.name)).toEqual(["f"]);
    const none = tr({ messages: m, tools: two, tool_choice: { type: "none" } });
    expect(none.tool_choice).toBe("none");
    expect(none.tools).toHaveLength(2);
    const noTools = tr({ messages: m, tool_choice: { type: "any" } });
    expect("tool_choice" in noTools).toBe(false);
    const single = tr({
      messages: m,
      tools: two,
      tool_choice: { type: "auto", disable_parallel_tool_use: true },
    });
    expect(single.parallel_tool_calls).toBe(false);
    expect(() =>
      tr({ messages: m, tools: two, tool_choice: { type: "tool", name: "zz" } }),
    ).toThrow('tool_choice names tool "zz"');
  });

  test("tools map to functions without Anthropic-only keys", () => {
    const out = tr({
      messages: [{ role: "user", content: "hi" }],
      tools: [{ ...weather, description: "d", strict: true, cache_control: {} }],
    });
    expect(out.tools).toEqual([
      {
        type: "function",
        function: { name: "get_weather", description: "d", parameters: weather.input_schema },
      },
    ]);
  });

  test("empty tools are not sent", () => {
    const out = tr({ messages: [{ role: "user", content: "hi" }], tools: [] });
    expect("tools" in out).toBe(false);
  });

  test("server tools are filtered", () => {
    const out = tr({
      messages: [{ role: "user", content: "hi" }],
      tools: [
        { type: "web_search_20250305", name: "web_search" },
        { type: "custom", ...weather },
      ],
    });
    expect(out.tools!.map((t) => t.function.name)).toEqual(["get_weather"]);
  });

  test("llama.cpp profile strips grammar hazards but keeps a property named pattern", () => {
    const schema = {
      type: "object",
      properties: {
        year: { type: "string", pattern: "^\\d{4}$", format: "regex" },
        day: { type: "string", format: "date" },
        pattern: { type: "string", description: "a property called pattern" },
        list: { type: "array", items: { type: "string", pattern: "x+" } },
        any: { anyOf: [{ type: "string", format: "email" }, { type: "number" }] },
      },
      required: ["pattern"],
    };
    const m = [{ role: "user", content: "hi" }];
    const out = tr({ messages: m, tools: [{ name: "g", input_schema: schema }] }, "llamacpp");
    expect(out.tools![0]!.function.parameters).toEqual({
      type: "object",
      properties: {
        year: { type: "string" },
        day: { type: "string", format: "date" },
        pattern: { type: "string", description: "a property called pattern" },
        list: { type: "array", items: { type: "string" } },
        any: { anyOf: [{ type: "string" }, { type: "number" }] },
      },
      required: ["pattern"],
    });
    // Other servers get the schema as written.
    expect(
      tr({ messages: m, tools: [{ name: "g", input_schema: schema }] }).tools![0]!.function
        .parameters,
    ).toEqual(schema);
  });
});
