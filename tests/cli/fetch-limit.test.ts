import { describe, expect, test } from "bun:test";
import {
  BUN_DEFAULT_FETCH_LIMIT,
  FETCH_LIMIT,
  FETCH_LIMIT_VAR,
  raiseFetchLimit,
} from "../../src/cli/fetch-limit.ts";

/** A platform whose execve fails with `why`, recording what it was asked for. */
function failingExec(why: string) {
  const calls: Record<string, string>[] = [];
  return {
    calls,
    execSelf(env: Readonly<Record<string, string>>) {
      calls.push({ ...env });
      return why;
    },
  };
}

describe("raiseFetchLimit", () => {
  test("without the variable, qm runs itself again with it set to the runtime's largest", () => {
    const p = failingExec("execve failed (ENOEXEC)");
    raiseFetchLimit({ PATH: "/bin" }, p);
    expect(p.calls).toEqual([{ [FETCH_LIMIT_VAR]: String(FETCH_LIMIT) }]);
    expect(FETCH_LIMIT).toBe(65_535);
  });

  test("when that cannot be done, the warning says the limit, why and how to lift it", () => {
    const warning = raiseFetchLimit({}, failingExec("not available on macOS yet"));
    expect(warning).toContain(`at most ${BUN_DEFAULT_FETCH_LIMIT} upstream requests`);
    expect(warning).toContain("not available on macOS yet");
    expect(warning).toContain(`${FETCH_LIMIT_VAR}=${FETCH_LIMIT}`);
  });

  test("a variable already set (by the run before, or by the user) is kept: no exec, nothing to say", () => {
    for (const value of [String(FETCH_LIMIT), "1024", ""]) {
      const p = failingExec("unused");
      expect(raiseFetchLimit({ [FETCH_LIMIT_VAR]: value }, p)).toBeNull();
      expect(p.calls).toEqual([]);
    }
  });
});
