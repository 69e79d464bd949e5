import { describe, expect, test } from "bun:test";
import { DEFAULT_DEMO_OPTIONS, parseDemoFlags } from "../../src/demo/flags.ts";

describe("parseDemoFlags", () => {
  test("defaults", () => {
    expect(parseDemoFlags([])).toEqual({ kind: "run", options: DEFAULT_DEMO_OPTIONS });
  });

  test("every flag, both spellings", () => {
    const r = parseDemoFlags([
      "--port=8081",
      "--host",
      "0.0.0.0",
      "--name",
      "qwen",
      "--load-delay-ms",
      "100",
      "--token-ms=0",
      "--tokens",
      "5",
      "--crash-at-start",
      "--crash-after-tokens",
      "3",
      "--ignore-sigterm",
      "--hang-health",
      "--tool-calls",
      "--exit-after-ms",
      "900",
      "--fail-status",
      "429",
    ]);
    expect(r).toEqual({
      kind: "run",
      options: {
        port: 8081,
        host: "0.0.0.0",
        name: "qwen",
        loadDelayMs: 100,
        tokenMs: 0,
        tokens: 5,
        crashAtStart: true,
        crashAfterTokens: 3,
        ignoreSigterm: true,
        hangHealth: true,
        toolCalls: true,
        exitAfterMs: 900,
        failStatus: 429,
      },
    });
  });

  test("the flags that break answers", () => {
    const r = parseDemoFlags([
      "--hang-before-headers",
      "--stall-after-tokens",
      "4",
      "--bad-sse=mid-event",
    ]);
    expect(r).toEqual({
      kind: "run",
      options: {
        ...DEFAULT_DEMO_OPTIONS,
        hangBeforeHeaders: true,
        stallAfterTokens: 4,
        badSse: "mid-event",
      },
    });
  });

  test("the dashboard's flags: Markdown answers, a log line per request", () => {
    expect(parseDemoFlags(["--markdown", "--log-requests"])).toEqual({
      kind: "run",
      options: { ...DEFAULT_DEMO_OPTIONS, markdown: true, logRequests: true },
    });
    expect(parseDemoFlags(["--markdown=yes"])).toEqual({
      kind: "error",
      message: "--markdown takes no value",
    });
  });

  test("the agent's flags: which tool, and how many tool rounds before the answer", () => {
    expect(parseDemoFlags(["--tool-calls", "--tool", "Bash", "--tool-rounds=3"])).toEqual({
      kind: "run",
      options: { ...DEFAULT_DEMO_OPTIONS, toolCalls: true, tool: "Bash", toolRounds: 3 },
    });
    expect(parseDemoFlags(["--tool=exec_command"])).toMatchObject({
      options: { tool: "exec_command" },
    });
  });

  test("help", () => {
    expect(parseDemoFlags(["--port", "1", "--help"])).toEqual({ kind: "help" });
    expect(parseDemoFlags(["-h"])).toEqual({ kind: "help" });
  });

  test.each([
    [["--bogus"], "unknown option --bogus"],
    [["--port"], "--port needs a value"],
    [["--port", "-1"], '--port needs a whole number >= 0, got "-1"'],
    [["--tokens", "1.5"], '--tokens needs a whole number >= 0, got "1.5"'],
    [["--port", "70000"], "--port must be <= 65535"],
    [["--fail-status", "200"], "--fail-status must be an HTTP error status (400-599)"],
    [["--tool-calls=yes"], "--tool-calls takes no value"],
    [["--name", ""], "--name must not be empty"],
    [["--bad-sse", "weird"], "--bad-sse needs one of no-done, mid-event, not-json"],
    [["--bad-sse"], "--bad-sse needs one of no-done, mid-event, not-json"],
    [["--hang-before-headers=1"], "--hang-before-headers takes no value"],
    [["--tool"], "--tool needs a tool name"],
    [["--tool-rounds", "x"], '--tool-rounds needs a whole number >= 0, got "x"'],
  ])("%p is a usage error", (argv, message) => {
    expect(parseDemoFlags(argv)).toEqual({ kind: "error", message });
  });
});
