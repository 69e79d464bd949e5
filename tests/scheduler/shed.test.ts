import { describe, expect, test } from "bun:test";
import { shedVictims } from "../../src/scheduler/shed.ts";
import { harness } from "../support/harness.ts";

function model(id: string, vram: number) {
  return `[models.${id}]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nest_vram_gb = ${vram}\n`;
}

const TOML = `
[resources]
vram_budget_gb = 24
[groups.all]
members = ["a", "b", "c"]
swap = false
${model("a", 8)}${model("b", 8)}${model("c", 6)}`;

function loaded() {
  const h = harness(TOML);
  for (const id of ["a", "b", "c"]) {
    const r = h.req(id);
    h.finishSwap();
    h.sched.serveDone(r);
  }
  return h;
}

describe("watchdog shedding", () => {
  test("when the ceiling drops below the residents, idle ones stop LRU-first until they fit", () => {
    const h = loaded();
    h.sched.shed(15); // 22 GB resident
    expect(h.fx.stops).toEqual([["a"]]);
    expect(h.fx.log).toContain("stop [a] GPU memory pressure");
  });

  test("nothing is shed while everything fits", () => {
    const h = loaded();
    h.sched.shed(22);
    expect(h.fx.stops).toEqual([]);
  });

  test("a busy (or leased) model is never shed, even if that leaves the residents over", () => {
    const h = loaded();
    const ra = h.req("a");
    const rb = h.req("b");
    expect(h.fx.granted).toContain(ra);
    expect(h.fx.granted).toContain(rb);
    h.sched.shed(5);
    expect(h.fx.stops).toEqual([["c"]]);
  });

  test("held models go last", () => {
    const h = harness(TOML);
    for (const id of ["a", "b", "c"]) {
      const r = h.req(id);
      h.finishSwap();
      h.sched.serveDone(r, { toolCalls: id === "a" }); // only a is held
    }
    h.sched.shed(15); // a is least recently used, but held: b goes instead
    expect(h.fx.stops).toEqual([["b"]]);
  });
});

describe("shedVictims", () => {
  const est: Record<string, number> = { u: 0, a: 8, b: 8 };
  const base = {
    estimate: (id: string) => est[id]!,
    sheddable: () => true,
    held: () => false,
  };

  test("an idle model with an unknown estimate is left alone while the known ones fit", () => {
    expect(shedVictims({ ...base, residents: ["u", "a", "b"], limitGb: 16 })).toEqual([]);
  });

  test("under pressure, unknown footprints go first, then LRU, stopping once it fits", () => {
    expect(shedVictims({ ...base, residents: ["a", "u", "b"], limitGb: 10 })).toEqual(["u", "a"]);
  });
});
