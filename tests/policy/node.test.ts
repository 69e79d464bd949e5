/** Admission on a managed node (src/peers/mistralrs.md): pure, over configs the loader builds. */
import { describe, expect, test } from "bun:test";
import { GroupPolicy } from "../../src/policy/group.ts";
import { NodeAwarePolicy, type NodeView, nodeEviction, nodeExcess } from "../../src/policy/node.ts";
import { config } from "../support/config.ts";

function node(keys: string) {
  const cfg = config(
    `[models.local]\ncmd = "x"\nest_vram_gb = 8\n[models.other]\ncmd = "x"\nest_vram_gb = 8\n[groups.solo]\nexclusive = true\nmembers = ["local"]\n\n[peers.n]\nurl = "http://n.test"\nkind = "mistralrs"\n${keys}\n`,
  );
  const m = (id: string) => cfg.models[`n/${id}`]!;
  return { cfg, m, s: cfg.peers.n!.node! };
}

describe("node admission", () => {
  test("vram budget: fits beside residents; else least recently used unpinned go until it fits", () => {
    const { m, s } = node(`vram_budget_gb = 20\nest_vram_gb = { a = 10, b = 6, c = 15 }`);
    expect(nodeEviction(m("b"), [m("a")], s)).toEqual({ ok: true, evict: [], budget: [] });
    expect(nodeEviction(m("c"), [m("a"), m("b")], s)).toEqual({
      ok: true,
      evict: ["a", "b"].map((x) => `n/${x}`),
      budget: ["n/a", "n/b"],
    });
  });

  test("pinned models are charged and never evicted; no room is refused with the numbers", () => {
    const { m, s } = node(
      `vram_budget_gb = 20\nest_vram_gb = { a = 10, b = 6, c = 15 }\npinned = ["a"]`,
    );
    expect(nodeEviction(m("b"), [m("a")], s).ok).toBe(true);
    const r = nodeEviction(m("c"), [m("a"), m("b")], s);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain('node "n"');
    if (!r.ok) expect(r.reason).toContain("n/a");
  });

  test("max_loaded: LRU unpinned go until one more fits; pinned ones filling it refuse", () => {
    const { m, s } = node(`models = ["a", "b", "c"]\nmax_loaded = 2\npinned = ["b"]`);
    expect(nodeEviction(m("c"), [m("a")], s)).toMatchObject({ ok: true, evict: [] });
    expect(nodeEviction(m("c"), [m("b"), m("a")], s)).toMatchObject({ ok: true, evict: ["n/a"] });
    const one = node(`models = ["a", "b"]\nmax_loaded = 1\npinned = ["a"]`);
    const r = nodeEviction(one.m("b"), [one.m("a")], one.s);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain("max_loaded");
  });

  test("both limits apply; neither: nothing is evicted", () => {
    const both = node(
      `models = ["a", "b", "c"]\nvram_budget_gb = 100\nest_vram_gb = { a = 1, b = 1, c = 1 }\nmax_loaded = 2`,
    );
    expect(nodeEviction(both.m("c"), [both.m("a"), both.m("b")], both.s)).toMatchObject({
      evict: ["n/a"],
    });
    const none = node(`models = ["a", "b", "c"]`);
    expect(nodeEviction(none.m("c"), [none.m("a"), none.m("b")], none.s)).toMatchObject({
      ok: true,
      evict: [],
    });
  });

  test("unknown estimates under a budget: an unknown target runs with no unpinned model beside it; an unknown resident goes first", () => {
    const { m, s } = node(
      `models = ["u"]\nvram_budget_gb = 20\nest_vram_gb = { a = 5, b = 5 }\npinned = ["b"]`,
    );
    expect(nodeEviction(m("u"), [m("a"), m("b")], s)).toMatchObject({ ok: true, evict: ["n/a"] });
    expect(nodeEviction(m("a"), [m("u")], s)).toMatchObject({ ok: true, evict: ["n/u"] });
  });

  test("local and node models never evict each other", () => {
    const { cfg } = node(`models = ["a"]\nmax_loaded = 1`);
    const policy = new NodeAwarePolicy(new GroupPolicy(cfg), cfg);
    // The exclusive local group evicts other local models, never the node's.
    expect(policy.evictionFor("local", ["n/a", "other"])).toMatchObject({
      ok: true,
      evict: ["other"],
    });
    expect(policy.evictionFor("n/a", ["local", "other"])).toMatchObject({ ok: true, evict: [] });
  });
});

describe("admission and what is known of the node now (NodeView)", () => {
  const view = (over: Partial<NodeView>): NodeView => ({
    refusal: () => null,
    canUnload: () => null,
    ...over,
  });

  test("a refusal (node down, model not listed) is the answer, before any eviction", () => {
    const { cfg } = node(`models = ["a", "b"]\nmax_loaded = 1`);
    const why = 'node "n" is down (connection refused): model "n/b" cannot load there now';
    const policy = new NodeAwarePolicy(
      new GroupPolicy(cfg),
      cfg,
      view({ refusal: (m) => (m.id === "n/b" ? why : null) }),
    );
    expect(policy.evictionFor("n/b", ["n/a"])).toEqual({ ok: false, reason: why });
    expect(policy.evictionFor("n/a", [])).toMatchObject({ ok: true, evict: [] });
    // Local models never ask it.
    expect(policy.evictionFor("local", ["n/a"])).toMatchObject({ ok: true });
  });

  test("a node that cannot unload: nothing is evicted; a target that needs room is refused with why", () => {
    const { cfg } = node(
      `models = ["a", "b", "c"]\nmax_loaded = 2\nvram_budget_gb = 20\nest_vram_gb = { a = 8, b = 8, c = 8 }`,
    );
    const policy = new NodeAwarePolicy(new GroupPolicy(cfg), cfg, view({ canUnload: () => false }));
    expect(policy.evictionFor("n/b", ["n/a"])).toEqual({ ok: true, evict: [], budget: [] });
    expect(policy.evictionFor("n/c", ["n/a", "n/b"])).toEqual({
      ok: false,
      reason:
        'node "n" cannot unload models (it answered no_loader_config) and it holds 2 models, at most 2 (max_loaded): model "n/c" cannot load there',
    });
    const tight = node(`models = ["a", "b"]\nvram_budget_gb = 10\nest_vram_gb = { a = 8, b = 8 }`);
    const p2 = new NodeAwarePolicy(
      new GroupPolicy(tight.cfg),
      tight.cfg,
      view({ canUnload: () => false }),
    );
    expect(p2.evictionFor("n/b", ["n/a"])).toMatchObject({ ok: false });
    // Able to unload (or not known yet): the usual LRU eviction.
    const p3 = new NodeAwarePolicy(new GroupPolicy(cfg), cfg, view({ canUnload: () => null }));
    expect(p3.evictionFor("n/c", ["n/a", "n/b"])).toMatchObject({ ok: true, evict: ["n/a"] });
  });
});

describe("adopted models over the node's limits (nodeExcess)", () => {
  test("max_loaded and the budget: least recently used first, pinned and busy ones kept and said", () => {
    const { m, s } = node(`models = ["a", "b", "c"]\nmax_loaded = 1\npinned = ["b"]`);
    expect(nodeExcess([m("a"), m("b"), m("c")], new Set(), s)).toEqual({
      over: "3 models loaded, more than max_loaded = 1",
      evict: ["n/a", "n/c"],
      stays: null,
    });
    expect(nodeExcess([m("a"), m("b"), m("c")], new Set(["n/c"]), s)).toEqual({
      over: "3 models loaded, more than max_loaded = 1",
      evict: ["n/a"],
      stays:
        "2 models loaded, more than max_loaded = 1; pinned (n/b) are not unloaded; busy (n/c) wait until they drain",
    });
    expect(nodeExcess([m("a")], new Set(), s)).toEqual({ over: null, evict: [], stays: null });
    const budget = node(`vram_budget_gb = 10\nest_vram_gb = { a = 6, b = 6, c = 6 }`);
    const bm = budget.m;
    expect(nodeExcess([bm("a"), bm("b"), bm("c")], new Set(), budget.s)).toEqual({
      over: "18 GB loaded, more than vram_budget_gb = 10",
      evict: ["n/a", "n/b"],
      stays: null,
    });
  });
});

describe("node config", () => {
  test("named models join the scheduler as NODE/MODEL; node keys elsewhere are refused", () => {
    const { cfg } = node(`models = ["a"]\nest_vram_gb = { b = 3 }\npinned = ["c"]`);
    expect(Object.keys(cfg.models).filter((id) => id.startsWith("n/"))).toEqual([
      "n/a",
      "n/b",
      "n/c",
    ]);
    expect(cfg.models["n/b"]).toMatchObject({
      proxy: "http://n.test",
      useModelName: "b",
      estVramGb: 3,
      node: { node: "n", remote: "b", pinned: false, discovered: false },
    });
    expect(cfg.models["n/c"]?.node?.pinned).toBe(true);
    expect(() =>
      config(`[peers.p]\nurl = "http://p.test"\nmodels = ["x"]\nmax_loaded = 2\n`),
    ).toThrow(/only a peer of kind "mistralrs"/);
    expect(() =>
      config(`[peers.n]\nurl = "http://n.test"\nkind = "mistralrs"\ndefrag_after_cycles = 3\n`),
    ).toThrow(/restart_cmd/);
    expect(() =>
      config(
        `[models."n/a"]\ncmd = "x"\n[peers.n]\nurl = "http://n.test"\nkind = "mistralrs"\nmodels = ["a"]\n`,
      ),
    ).toThrow(/both configured and a model of node/);
  });
});
