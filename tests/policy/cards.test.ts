import { describe, expect, test } from "bun:test";
import { type PlacedResident, placeOnCards } from "../../src/policy/cards.ts";
import { GroupPolicy } from "../../src/policy/group.ts";
import type { BudgetView } from "../../src/policy/types.ts";
import { config } from "../support/config.ts";

const cards = (...ceilings: number[]) => ceilings.map((ceilingGb, index) => ({ index, ceilingGb }));
const r = (id: string, estGb: number, gpus: number[], persistent = false): PlacedResident => ({
  id,
  estGb,
  gpus,
  persistent,
});

describe("placeOnCards", () => {
  test("least loaded first: the card with the most room, ties to the lower index", () => {
    const placed = placeOnCards({
      target: "t",
      needGb: 4,
      want: 1,
      cards: cards(24, 24, 24),
      residents: [r("a", 10, [0]), r("b", 2, [2])],
    });
    expect(placed).toEqual({ kind: "fits", gpus: [1], evict: [] });
    const tie = placeOnCards({
      target: "t",
      needGb: 4,
      want: 1,
      cards: cards(8, 8),
      residents: [],
    });
    expect(tie).toEqual({ kind: "fits", gpus: [0], evict: [] });
  });

  test("a card with room is taken before anything is evicted; then LRU on that card only", () => {
    const roomy = placeOnCards({
      target: "t",
      needGb: 8,
      want: 1,
      cards: cards(10, 10),
      residents: [r("a", 6, [0]), r("b", 2, [1])],
    });
    expect(roomy).toEqual({ kind: "fits", gpus: [1], evict: [] });
    const full = placeOnCards({
      target: "t",
      needGb: 8,
      want: 1,
      cards: cards(10, 10),
      // LRU first: a (card 0) is older than c (card 1), but card 1 is the less loaded one.
      residents: [r("a", 6, [0]), r("c", 5, [1]), r("b", 3, [0])],
    });
    expect(full).toEqual({ kind: "fits", gpus: [1], evict: ["c"] });
  });

  test("evicts only on the chosen card, and never a persistent resident", () => {
    const placed = placeOnCards({
      target: "t",
      needGb: 8,
      want: 1,
      cards: cards(10, 10),
      residents: [r("p", 6, [1], true), r("a", 5, [0]), r("b", 4, [1])],
    });
    // Card 0 has 5 free, card 1 has 0; card 0 is tried first and a goes; b and p stay.
    expect(placed).toEqual({ kind: "fits", gpus: [0], evict: ["a"] });
    const pinned = placeOnCards({
      target: "t",
      needGb: 8,
      want: 1,
      cards: cards(10),
      residents: [r("p", 6, [0], true)],
    });
    expect(pinned.kind).toBe("cannot");
    expect((pinned as { reason: string }).reason).toContain("cannot be evicted (p)");
  });

  test("a model on n cards needs est/n on each; a fixed list is honoured or refused", () => {
    const two = placeOnCards({
      target: "t",
      needGb: 16,
      want: 2,
      cards: cards(10, 10, 10, 10),
      residents: [r("a", 4, [1]), r("b", 9, [2])],
    });
    expect(two).toEqual({ kind: "fits", gpus: [0, 3], evict: [] });
    const fixed = placeOnCards({
      target: "t",
      needGb: 6,
      want: [1, 2],
      cards: cards(10, 10, 10),
      residents: [r("a", 8, [1]), r("b", 4, [0])],
    });
    expect(fixed).toEqual({ kind: "fits", gpus: [1, 2], evict: ["a"] });
    const missing = placeOnCards({
      target: "t",
      needGb: 1,
      want: [5],
      cards: cards(10),
      residents: [],
    });
    expect(missing).toMatchObject({ kind: "cannot", reason: expect.stringContaining("GPU 5") });
    const tooMany = placeOnCards({
      target: "t",
      needGb: 1,
      want: 3,
      cards: cards(10, 10),
      residents: [],
    });
    expect(tooMany).toMatchObject({
      kind: "cannot",
      reason: expect.stringContaining("needs 3 GPUs"),
    });
  });

  test("a share bigger than a card's ceiling cannot fit even alone", () => {
    const big = placeOnCards({
      target: "t",
      needGb: 30,
      want: 1,
      cards: cards(24, 24),
      residents: [],
    });
    expect(big).toMatchObject({
      kind: "cannot",
      reason: expect.stringContaining("cannot fit even alone"),
    });
    // Split over two cards it fits.
    const split = placeOnCards({
      target: "t",
      needGb: 30,
      want: 2,
      cards: cards(24, 24),
      residents: [],
    });
    expect(split).toEqual({ kind: "fits", gpus: [0, 1], evict: [] });
  });

  test("a resident not placed (started before the cards were known) counts in full on every card", () => {
    const placed = placeOnCards({
      target: "t",
      needGb: 6,
      want: 1,
      cards: cards(10, 10),
      residents: [r("old", 6, []), r("a", 1, [1])],
    });
    // 4 GB free on card 0, 3 on card 1: old must go, from the roomier card's point of view.
    expect(placed).toEqual({ kind: "fits", gpus: [0], evict: ["old"] });
  });

  test("unknown estimate: the least loaded card, no evictions", () => {
    const placed = placeOnCards({
      target: "t",
      needGb: 0,
      want: 1,
      cards: cards(10, 10),
      residents: [r("a", 0, [0])],
    });
    expect(placed).toEqual({ kind: "fits", gpus: [1], evict: [] });
  });
});

describe("GroupPolicy with cards", () => {
  const cfg = config(`
[groups.pin]
members = ["p"]
persistent = true
exclusive = false
[models.a]
cmd = "x"
est_vram_gb = 8
[models.b]
cmd = "x"
est_vram_gb = 8
[models.c]
cmd = "x"
est_vram_gb = 8
gpus = 2
[models.p]
cmd = "x"
est_vram_gb = 8
`);
  const placed: Record<string, number[]> = {};
  const view: BudgetView = {
    vramGb: () => 20,
    ramGb: () => 0,
    cards: () => cards(10, 10),
    placement: (id) => placed[id],
  };
  const policy = new GroupPolicy(cfg, view);

  test("models of one swap group land on different cards instead of swapping", () => {
    expect(policy.evictionFor("a", [])).toEqual({ ok: true, evict: [], budget: [], gpus: [0] });
    placed.a = [0];
    expect(policy.evictionFor("b", ["a"])).toEqual({ ok: true, evict: [], budget: [], gpus: [1] });
    placed.b = [1];
    // c needs 4 GB on each of two cards: each card has 2 free, so a and b both go.
    expect(policy.evictionFor("c", ["a", "b"])).toEqual({
      ok: true,
      evict: ["a", "b"],
      budget: ["a", "b"],
      gpus: [0, 1],
    });
    // With a third card free, c takes it and the emptier... still two cards: 0 and 1 are full,
    // so c lands on card 2 plus the LRU-evicted card 0 only.
    const three = new GroupPolicy(cfg, { ...view, cards: () => cards(10, 10, 10) });
    expect(three.evictionFor("c", ["a", "b"])).toEqual({
      ok: true,
      evict: ["a"],
      budget: ["a"],
      gpus: [0, 2],
    });
  });

  test("a persistent resident is charged, never evicted", () => {
    const pinned: Record<string, number[]> = { p: [0], a: [1] };
    const v: BudgetView = { ...view, cards: () => cards(10, 10), placement: (id) => pinned[id] };
    const answer = new GroupPolicy(cfg, v).evictionFor("b", ["p", "a"]);
    expect(answer).toEqual({ ok: true, evict: ["a"], budget: ["a"], gpus: [1] });
  });

  test("no cards: the answer carries no gpus (one budget for the box, as before)", () => {
    const box = new GroupPolicy(cfg, { vramGb: () => 20, ramGb: () => 0 });
    const answer = box.evictionFor("a", []);
    expect(answer).toEqual({ ok: true, evict: [], budget: [] });
  });
});
