import { describe, expect, test } from "bun:test";
import { MatrixPolicy } from "../../src/policy/matrix.ts";
import { config } from "../support/config.ts";
import { modelsToml } from "../support/harness.ts";

function policy(matrix: string, ...models: string[]) {
  return new MatrixPolicy(
    config(`[router]\npolicy = "matrix"\n[matrix]\n${matrix}\n${modelsToml(...models)}`),
  );
}

describe("matrix policy", () => {
  const p = policy(
    `sets = [["chat", "embed"], ["coder", "embed"], ["huge"]]\nevict_cost = { "coder" = 30 }`,
    "chat",
    "embed",
    "coder",
    "huge",
    "loner",
  );

  test("a target already co-resident with its set's members evicts nothing", () => {
    expect(p.evictionFor("chat", ["embed"])).toEqual({ ok: true, evict: [] });
  });

  test("chooses the set whose evictions cost least", () => {
    // embed is in both of its sets; chat + coder resident: evicting coder costs 30, chat costs 1.
    expect(p.evictionFor("embed", ["coder", "chat"])).toEqual({ ok: true, evict: ["chat"] });
  });

  test("ties go to the set listed first", () => {
    // Both sets containing embed cost 1 with only huge resident.
    expect(p.evictionFor("embed", ["huge"])).toEqual({ ok: true, evict: ["huge"] });
    const q = policy(`sets = [["x", "a"], ["x", "b"]]`, "x", "a", "b");
    expect(q.evictionFor("x", ["a", "b"])).toEqual({ ok: true, evict: ["b"] });
  });

  test("a model in no set runs alone", () => {
    expect(p.evictionFor("loner", ["chat", "embed"])).toEqual({
      ok: true,
      evict: ["chat", "embed"],
    });
  });

  test("a set of one evicts everything else", () => {
    expect(p.evictionFor("huge", ["chat", "embed", "coder"])).toEqual({
      ok: true,
      evict: ["chat", "embed", "coder"],
    });
  });

  test('evicting an evict = "sleep" model is cheap: the set that sleeps it wins over one that stops', () => {
    const cfg = config(
      `[router]\npolicy = "matrix"\n[matrix]\nsets = [["t", "s"], ["t", "x"]]\n` +
        `${modelsToml("t", "x")}\n[models.s]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nevict = "sleep"\n`,
    );
    const p = new MatrixPolicy(cfg);
    // x and s resident: the first set stops x (cost 1), the second sleeps s (cost 0.1).
    expect(p.evictionFor("t", ["x", "s"])).toEqual({ ok: true, evict: ["s"] });
    // An explicit evict_cost still wins.
    const listed = new MatrixPolicy({
      ...cfg,
      matrix: { ...cfg.matrix, evictCost: { s: 5 } },
    });
    expect(listed.evictionFor("t", ["x", "s"])).toEqual({ ok: true, evict: ["x"] });
  });
});
