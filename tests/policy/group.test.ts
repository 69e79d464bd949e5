import { describe, expect, test } from "bun:test";
import { GroupPolicy } from "../../src/policy/group.ts";
import { config } from "../support/config.ts";
import { modelsToml } from "../support/harness.ts";

function policy(groups: string, ...models: string[]) {
  return new GroupPolicy(config(`${groups}\n${modelsToml(...models)}`));
}

describe("group policy", () => {
  test("ungrouped models swap with each other (implicit default group)", () => {
    const p = policy("", "a", "b", "c");
    expect(p.evictionFor("a", ["b", "c"])).toEqual({ ok: true, evict: ["b", "c"], budget: [] });
  });

  test("swap = false keeps siblings resident", () => {
    const p = policy(`[groups.g]\nmembers = ["a", "b"]\nswap = false\n`, "a", "b");
    expect(p.evictionFor("a", ["b"])).toEqual({ ok: true, evict: [], budget: [] });
  });

  test("an exclusive target evicts other groups except persistent ones", () => {
    const p = policy(
      `[groups.x]\nmembers = ["a"]\n[groups.y]\nmembers = ["b"]\nexclusive = false\n[groups.p]\nmembers = ["c"]\npersistent = true\n`,
      "a",
      "b",
      "c",
    );
    expect(p.evictionFor("a", ["b", "c"])).toEqual({ ok: true, evict: ["b"], budget: [] });
  });

  test("legacy quirk: a non-exclusive target does not evict members of exclusive groups", () => {
    const p = policy(
      `[groups.x]\nmembers = ["a"]\n[groups.y]\nmembers = ["b"]\nexclusive = false\n`,
      "a",
      "b",
    );
    expect(p.evictionFor("b", ["a"])).toEqual({ ok: true, evict: [], budget: [] });
  });

  test("keeps the LRU order of running models in the evict set", () => {
    const p = policy("", "a", "b", "c", "d");
    expect(p.evictionFor("a", ["d", "b", "c"])).toEqual({
      ok: true,
      evict: ["d", "b", "c"],
      budget: [],
    });
  });
});
