/**
 * The demo model in an agent loop (`--tool-calls`): which tool it calls, with arguments valid for
 * the tool's schema — checked against the tools Codex CLI and Claude Code really send — and the
 * text answer that ends the loop.
 */
import { describe, expect, test } from "bun:test";
import { schemaErrors } from "../../src/demo/json-schema.ts";
import {
  EXAMPLE_ARGUMENTS,
  loopAnswer,
  offeredTools,
  pickTool,
  toolArguments,
} from "../../src/demo/tools.ts";
import claudeCode from "./fixtures/claude-code-2.1.197-tools.json";
import codex from "./fixtures/codex-0.171-tools.json";

const fn = (name: string, parameters: unknown = {}) => ({
  type: "function",
  function: { name, parameters },
});

describe("pickTool", () => {
  test("a shell tool by default: Codex CLI's exec_command, Claude Code's Bash", () => {
    expect(pickTool(offeredTools(codex))?.name).toBe("exec_command");
    expect(pickTool(offeredTools(claudeCode))?.name).toBe("Bash");
    // Codex's older shell tool, Responses' and Anthropic's tool shapes.
    expect(pickTool(offeredTools([fn("read"), { type: "function", name: "shell" }]))?.name).toBe(
      "shell",
    );
    expect(
      pickTool(offeredTools([{ name: "Read", input_schema: {} }, { name: "bash" }]))?.name,
    ).toBe("bash");
  });

  test("no shell tool: the first; --tool NAME when offered (any case); none offered: null", () => {
    const tools = offeredTools([fn("search"), fn("get_weather")]);
    expect(pickTool(tools)?.name).toBe("search");
    expect(pickTool(tools, "get_weather")?.name).toBe("get_weather");
    expect(pickTool(offeredTools(claudeCode), "read")?.name).toBe("Read");
    expect(pickTool(offeredTools(codex), "TodoWrite")?.name).toBe("exec_command");
    expect(pickTool([])).toBeNull();
    expect(offeredTools([null, 3, { function: { name: "" } }, { type: "web_search" }])).toEqual([]);
  });
});

describe("toolArguments", () => {
  test.each([
    ["Codex CLI 0.171", codex],
    ["Claude Code 2.1.197", claudeCode],
  ])("every tool %s offers gets arguments valid for its schema", (_client, tools) => {
    for (const tool of offeredTools(tools)) {
      const args = toolArguments(tool, "demo-coder");
      expect({ tool: tool.name, errors: schemaErrors(tool.parameters, args) }).toEqual({
        tool: tool.name,
        errors: [],
      });
    }
  });

  test("a shell tool runs a harmless echo: as a string, or as argv", () => {
    const [exec] = offeredTools(codex);
    expect(toolArguments(exec!, "demo-coder")).toEqual({ cmd: "echo hello from demo-coder" });
    const bash = offeredTools(claudeCode).find((t) => t.name === "Bash")!;
    expect(toolArguments(bash, "x")).toEqual({ command: "echo hello from x" });
    const argv = fn("shell", {
      type: "object",
      properties: {
        command: { type: "array", items: { type: "string" } },
        timeout_ms: { type: "number" },
      },
      required: ["command", "timeout_ms"],
    });
    expect(toolArguments(offeredTools([argv])[0]!, "x")).toEqual({
      command: ["echo", "hello from x"],
      timeout_ms: 1,
    });
  });

  test("a tool that requires nothing gets the example where its schema allows it", () => {
    const args = (parameters: unknown) =>
      toolArguments(offeredTools([fn("t", parameters)])[0]!, "m");
    expect(args({})).toEqual(EXAMPLE_ARGUMENTS);
    expect(args({ type: "object", properties: { location: { type: "string" } } })).toEqual(
      EXAMPLE_ARGUMENTS,
    );
    expect(args({ type: "object", properties: {}, additionalProperties: false })).toEqual({});
    expect(args({ type: "object", properties: { unit: { enum: ["kelvin"] } } })).toEqual({});
  });
});

describe("loopAnswer", () => {
  const user = { role: "user", content: "run it" };
  const call = { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function" }] };
  const result = (content: unknown) => ({ role: "tool", tool_call_id: "c1", content });

  test("after a tool result, a text answer quoting it (its end) ends the loop", () => {
    expect(loopAnswer([user], 1)).toBeNull();
    expect(loopAnswer([user, call, result("hello from m\n")], 1)).toBe(
      "Done. The tool said: hello from m",
    );
    expect(loopAnswer([user, call, result([{ type: "text", text: "a  b" }])], 1)).toBe(
      "Done. The tool said: a b",
    );
    const long = loopAnswer([user, call, result(`${"x".repeat(300)} tail`)], 1)!;
    expect(long.endsWith("x tail")).toBe(true);
    expect(long.length).toBeLessThan(240);
    expect(loopAnswer("nope", 1)).toBeNull();
  });

  test("--tool-rounds N: N tool results since the last user message", () => {
    const two = [user, call, result("1"), call, result("2")];
    expect(loopAnswer(two.slice(0, 3), 2)).toBeNull();
    expect(loopAnswer(two, 2)).toBe("Done. The tool said: 2");
    // A new user message starts the count again.
    expect(loopAnswer([...two, user, call, result("3")], 2)).toBeNull();
  });
});
