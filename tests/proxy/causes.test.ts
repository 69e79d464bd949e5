import { describe, expect, test } from "bun:test";
import { failureCause, failureLogLine, upstreamFailure } from "../../src/proxy/causes.ts";
import { QmError } from "../../src/shared/errors.ts";

/** Bun's fetch errors: a code, and a message written for developers. */
const bunError = (code: string) =>
  Object.assign(
    new TypeError(
      `${code}: The socket connection was closed unexpectedly. For more information, pass \`verbose: true\` in the second argument to fetch()`,
    ),
    { code },
  );

describe("what a client is told about a failed upstream call", () => {
  test.each([
    ["ECONNREFUSED", "connection refused"],
    ["ConnectionRefused", "connection refused"],
    ["ECONNRESET", "connection reset"],
    ["ConnectionClosed", "the upstream closed the connection"],
    ["ETIMEDOUT", "timed out"],
    ["EHOSTUNREACH", "host unreachable"],
  ])("%s → %s", (code, cause) => {
    expect(failureCause(bunError(code))).toBe(cause);
    expect(upstreamFailure("m", bunError(code))).toBe(`model "m" failed to answer: ${cause}`);
  });

  test("never the error's own text, whatever it is", () => {
    for (const error of [bunError("ESOMETHINGNEW"), new Error("verbose internals"), "text", null]) {
      const told = upstreamFailure("m", error, true);
      expect(told).toBe('model "m" failed mid-answer: the connection failed');
    }
    const timeout = new DOMException("The operation timed out.", "TimeoutError");
    expect(failureCause(timeout)).toBe("timed out");
  });

  test("a QmError (a timeout) is already in qm's words", () => {
    const err = new QmError("upstream_timeout", 'model "m" sent nothing for 2 s mid-answer');
    expect(upstreamFailure("m", err, true)).toBe(err.message);
  });

  test("qm's own log line keeps the raw error and the model's last output", () => {
    const line = failureLogLine("m", bunError("ECONNRESET"), ["CUDA error: out of memory"]);
    expect(line).toContain("verbose: true");
    expect(line).toContain("last output:\nCUDA error: out of memory");
    expect(failureLogLine("m", new Error("x"), [])).toBe('model "m": upstream call failed: x');
  });
});
