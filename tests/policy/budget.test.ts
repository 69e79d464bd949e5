import { describe, expect, test } from "bun:test";
import { GroupPolicy } from "../../src/policy/group.ts";
import { config } from "../support/config.ts";

function model(id: string, vram: number, ram = 0): string {
  return `[models.${id}]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nest_vram_gb = ${vram}\nest_ram_gb = ${ram}\n`;
}

const BASE = `
[resources]
vram_budget_gb = 24
ram_budget_gb = 64
${model("a", 8)}${model("b", 8)}${model("c", 8)}${model("big", 30)}${model("unk", 0)}
`;

describe("VRAM budget", () => {
  const p = new GroupPolicy(config(BASE));

  test("a target that fits beside the residents evicts nothing (no swap-group rule)", () => {
    expect(p.evictionFor("c", ["a", "b"])).toEqual({ ok: true, evict: [], budget: [] });
  });

  test("otherwise least-recently-used residents go until it fits, and no more", () => {
    const cfg = config(
      `[resources]\nvram_budget_gb = 20\n${model("a", 8)}${model("b", 8)}${model("c", 8)}`,
    );
    expect(new GroupPolicy(cfg).evictionFor("c", ["b", "a"])).toEqual({
      ok: true,
      evict: ["b"],
      budget: ["b"],
    });
  });

  test("an unknown target estimate falls back to the static group policy", () => {
    expect(p.evictionFor("unk", ["a", "b"])).toEqual({ ok: true, evict: ["a", "b"], budget: [] });
  });

  test("an unknown resident is always evicted", () => {
    expect(p.evictionFor("a", ["unk", "b"])).toEqual({ ok: true, evict: ["unk"], budget: ["unk"] });
  });

  test("a model bigger than the ceiling cannot fit even alone, and says so with numbers", () => {
    const r = p.evictionFor("big", []);
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.reason).toBe(
        'model "big" needs 30 GB of VRAM but the VRAM ceiling is 24 GB: it cannot fit even alone',
      );
  });

  test("persistent residents are charged and never evicted", () => {
    const cfg = config(`
[resources]
vram_budget_gb = 20
[groups.pin]
members = ["p"]
persistent = true
${model("p", 10)}${model("a", 8)}${model("b", 8)}`);
    const pol = new GroupPolicy(cfg);
    expect(pol.evictionFor("b", ["p", "a"])).toEqual({ ok: true, evict: ["a"], budget: ["a"] });
    const cfg2 = config(`
[resources]
vram_budget_gb = 20
[groups.pin]
members = ["p"]
persistent = true
${model("p", 14)}${model("b", 8)}`);
    const r = new GroupPolicy(cfg2).evictionFor("b", ["p"]);
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.reason).toContain("14 GB stays in use by models that cannot be evicted (p)");
  });

  test("the live ceiling, not the static budget, is what admission uses", () => {
    let ceiling = 24;
    const pol = new GroupPolicy(config(BASE), { vramGb: () => ceiling, ramGb: () => 64 });
    expect(pol.evictionFor("c", ["a", "b"])).toEqual({ ok: true, evict: [], budget: [] });
    ceiling = 17;
    expect(pol.evictionFor("c", ["a", "b"])).toEqual({ ok: true, evict: ["a"], budget: ["a"] });
  });
});

describe("two pools", () => {
  const TOML = `
[resources]
vram_budget_gb = 24
ram_budget_gb = 32
[groups.cpu]
members = ["r1", "r2"]
pool = "ram"
swap = false
${model("g1", 8, 4)}${model("g2", 8, 20)}${model("r1", 0, 12)}${model("r2", 0, 12)}
`;
  const p = new GroupPolicy(config(TOML));

  test("a RAM-pool target is admitted against RAM and never evicts a GPU model", () => {
    expect(p.evictionFor("r2", ["g1", "r1"])).toEqual({ ok: true, evict: [], budget: [] });
    // g1's 4 GB spill + r1's 12 + r2's 12 = 28 > 27 → evict the RAM-pool model, never g1.
    const tight = new GroupPolicy(config(TOML.replace("ram_budget_gb = 32", "ram_budget_gb = 27")));
    expect(tight.evictionFor("r2", ["g1", "r1"])).toEqual({
      ok: true,
      evict: ["r1"],
      budget: ["r1"],
    });
  });

  test("a GPU target charges its RAM spill and evicts RAM-pool models LRU-first", () => {
    // g2 spills 20 GB: 12 + 12 + 20 > 32 → r1 (older) goes, and that is enough.
    expect(p.evictionFor("g2", ["r1", "r2"])).toEqual({ ok: true, evict: ["r1"], budget: ["r1"] });
  });

  test("a CPU model's 0 VRAM estimate is never read as unknown by a GPU target", () => {
    expect(p.evictionFor("g1", ["r1"])).toEqual({ ok: true, evict: [], budget: [] });
  });

  test("without a RAM budget, RAM-pool models follow their group's static rules among themselves", () => {
    const cfg = config(
      TOML.replace("ram_budget_gb = 32", "ram_budget_gb = 0").replace(
        "swap = false",
        "swap = true",
      ),
    );
    expect(new GroupPolicy(cfg).evictionFor("r2", ["g1", "r1"])).toEqual({
      ok: true,
      evict: ["r1"],
    });
  });
});
