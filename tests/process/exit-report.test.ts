import { describe, expect, test } from "bun:test";
import { exitError, exitReport, type ProcessExit } from "../../src/process/exit-info.ts";

const crash = (over: Partial<ProcessExit> = {}): ProcessExit => ({
  code: 1,
  signal: null,
  stderrTail: ["loading weights", "error: unknown model file /models/q.gguf"],
  phase: "starting",
  ...over,
});

describe("the exit report", () => {
  test("while loading: status, the last stderr line as the cause, and where the output is", () => {
    expect(exitReport("q", crash()).message).toBe(
      'model "q" exited while loading (exit code 1): error: unknown model file /models/q.gguf; ' +
        "its output is at /api/models/q/logs",
    );
  });

  test("while serving: no line of the model's output reaches a client", () => {
    const r = exitReport("q", crash({ phase: "ready", stderrTail: ["prompt: my secret"] }));
    expect(r.message).toBe(
      'model "q" exited unexpectedly (exit code 1); its output is at /api/models/q/logs',
    );
    expect(r.message).not.toContain("secret");
  });

  test("a signal is named; an unknown status says so; a silent model gets no cause", () => {
    expect(exitReport("q", crash({ code: null, signal: "SIGKILL", stderrTail: [] })).message).toBe(
      'model "q" exited while loading (signal SIGKILL); its output is at /api/models/q/logs',
    );
    expect(exitReport("q", crash({ code: null, phase: "ready" })).message).toContain(
      "(unknown status)",
    );
  });

  test("a long last line is cut to one short line", () => {
    const long = "x".repeat(400);
    const { message } = exitReport("q", crash({ stderrTail: [long] }));
    expect(message).toContain(`: ${"x".repeat(157)}...;`);
    expect(message).not.toContain("x".repeat(158));
  });

  test("the log line has the headline and the whole tail", () => {
    expect(exitReport("q", crash({ phase: "ready" })).log).toBe(
      'model "q" exited unexpectedly (exit code 1); last stderr lines:\n' +
        "  | loading weights\n" +
        "  | error: unknown model file /models/q.gguf",
    );
    expect(exitReport("q", crash({ stderrTail: [] })).log).toBe(
      'model "q" exited while loading (exit code 1); (it wrote nothing to stderr)',
    );
  });
});

describe("the exit error", () => {
  test("while loading: upstream_start_failed, the report, the command for the log, the facts", () => {
    const err = exitError("q", crash(), "llama-server -m /models/q.gguf");
    expect(err.code).toBe("upstream_start_failed");
    expect(err.status).toBe(502);
    expect(err.message).toBe(exitReport("q", crash()).message);
    expect(err.message).not.toContain("command:");
    expect(err.detail).toBe(
      "last stderr lines:\n  | loading weights\n  | error: unknown model file /models/q.gguf\n" +
        "command: llama-server -m /models/q.gguf",
    );
    expect(err.exit).toEqual({
      model: "q",
      code: 1,
      signal: null,
      stderrTail: ["loading weights", "error: unknown model file /models/q.gguf"],
    });
  });

  test("while serving: upstream_crashed, with the signal in its facts", () => {
    const exit = crash({ code: null, signal: "SIGSEGV", phase: "ready" });
    const err = exitError("q", exit);
    expect(err.code).toBe("upstream_crashed");
    expect(err.message).toBe(
      'model "q" exited unexpectedly (signal SIGSEGV); its output is at /api/models/q/logs',
    );
    expect(err.detail).not.toContain("command:");
    expect(err.exit).toMatchObject({ model: "q", code: null, signal: "SIGSEGV" });
  });

  test("its facts are a copy: the supervisor's buffer may change later", () => {
    const exit = crash();
    const err = exitError("q", exit);
    exit.stderrTail.push("later");
    expect(err.exit?.stderrTail).toHaveLength(2);
  });
});
