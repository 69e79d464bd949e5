import { describe, expect, test } from "bun:test";
import { type CardSplit, ChangeAttribution, type ModelView } from "../../src/gpu/by-change.ts";

const m = (id: string, state: ModelView["state"], pid: number | null = 100): ModelView => ({
  id,
  state,
  pid: state === "stopped" ? null : pid,
});

/** One card's split as plain numbers: [ours, foreign, {model: gb}]. */
function plain(split: CardSplit[], index = 0): [number, number, Record<string, number>] {
  const c = split.find((s) => s.index === index)!;
  return [c.oursGb, c.foreignGb, Object.fromEntries(c.models)];
}

describe("attribution by change", () => {
  test("a model's memory is what appeared while it started; foreign stays put meanwhile", () => {
    const a = new ChangeAttribution();
    // Idle: 2 GB of other programs.
    expect(plain(a.observe([{ index: 0, usedGb: 2 }], [m("x", "stopped")], false))).toEqual([
      0,
      2,
      {},
    ]);
    // x starts and allocates as it loads.
    expect(plain(a.observe([{ index: 0, usedGb: 5 }], [m("x", "starting")], false))).toEqual([
      3,
      2,
      { x: 3 },
    ]);
    // Ready: the first reading with nothing moving fixes x's measure.
    expect(plain(a.observe([{ index: 0, usedGb: 8 }], [m("x", "ready")], false))).toEqual([
      6,
      2,
      { x: 6 },
    ]);
    // Steady: another program's 4 GB is foreign at the next reading.
    expect(plain(a.observe([{ index: 0, usedGb: 12 }], [m("x", "ready")], false))).toEqual([
      6,
      6,
      { x: 6 },
    ]);
    expect(a.measured()).toEqual(new Map([["x", 6]]));
  });

  test("a stop: its memory leaves with it; lingering memory is not foreign while settling", () => {
    const a = new ChangeAttribution();
    a.observe([{ index: 0, usedGb: 1 }], [], false);
    a.observe([{ index: 0, usedGb: 9 }], [m("x", "starting")], false);
    a.observe([{ index: 0, usedGb: 9 }], [m("x", "ready")], false);
    expect(plain(a.observe([{ index: 0, usedGb: 9 }], [m("x", "stopping")], false))).toEqual([
      8,
      1,
      { x: 8 },
    ]);
    // Gone, but the driver has not given the memory back yet.
    expect(plain(a.observe([{ index: 0, usedGb: 9 }], [m("x", "stopped")], true))).toEqual([
      8,
      1,
      {},
    ]);
    expect(plain(a.observe([{ index: 0, usedGb: 1 }], [m("x", "stopped")], false))).toEqual([
      0,
      1,
      {},
    ]);
  });

  test("each start is measured afresh (a new pid), even between two readings", () => {
    const a = new ChangeAttribution();
    a.observe([{ index: 0, usedGb: 0 }], [], false);
    a.observe([{ index: 0, usedGb: 4 }], [m("x", "ready", 1)], false);
    expect(a.measured().get("x")).toBe(4);
    // Stopped and started again with a bigger context, unseen in between.
    a.observe([{ index: 0, usedGb: 6 }], [m("x", "ready", 2)], false);
    expect(a.measured().get("x")).toBe(6);
    expect(plain(a.observe([{ index: 0, usedGb: 6 }], [m("x", "ready", 2)], false))).toEqual([
      6,
      0,
      { x: 6 },
    ]);
  });

  test("two models: the second's memory is only what came with it", () => {
    const a = new ChangeAttribution();
    a.observe([{ index: 0, usedGb: 1 }], [], false);
    a.observe([{ index: 0, usedGb: 5 }], [m("x", "ready", 1)], false);
    a.observe([{ index: 0, usedGb: 5 }], [m("x", "ready", 1)], false);
    a.observe([{ index: 0, usedGb: 12 }], [m("x", "ready", 1), m("y", "starting", 2)], false);
    expect(
      plain(a.observe([{ index: 0, usedGb: 12 }], [m("x", "ready", 1), m("y", "ready", 2)], false)),
    ).toEqual([11, 1, { x: 4, y: 7 }]);
  });

  test("placed models are measured on their own cards only", () => {
    const a = new ChangeAttribution();
    const cards = (u0: number, u1: number) => [
      { index: 0, usedGb: u0 },
      { index: 1, usedGb: u1 },
    ];
    a.observe(cards(1, 0), [], false);
    const on = (id: string) => (id === "y" ? [1] : [0]);
    a.observe(cards(5, 3), [m("x", "ready", 1), m("y", "ready", 2)], false, on);
    const split = a.observe(cards(5, 3), [m("x", "ready", 1), m("y", "ready", 2)], false, on);
    expect(plain(split, 0)).toEqual([4, 1, { x: 4 }]);
    expect(plain(split, 1)).toEqual([3, 0, { y: 3 }]);
  });

  test("an asleep model's measure is dropped, and taken again when it wakes", () => {
    const a = new ChangeAttribution();
    a.observe([{ index: 0, usedGb: 0 }], [], false);
    a.observe([{ index: 0, usedGb: 4 }], [m("x", "ready", 1)], false);
    a.observe([{ index: 0, usedGb: 0 }], [{ ...m("x", "ready", 1), asleep: true }], true);
    expect(a.measured().has("x")).toBe(false);
    a.observe([{ index: 0, usedGb: 4 }], [m("x", "ready", 1)], false);
    expect(a.measured().get("x")).toBe(4);
  });

  test("foreign never goes negative nor above what is used", () => {
    const a = new ChangeAttribution();
    a.observe([{ index: 0, usedGb: 3 }], [], false);
    a.observe([{ index: 0, usedGb: 6 }], [m("x", "ready")], false);
    // The card now reads less than x was measured at (it freed some): foreign 0, ours all.
    expect(plain(a.observe([{ index: 0, usedGb: 2 }], [m("x", "ready")], false))).toEqual([
      2,
      0,
      { x: 3 },
    ]);
  });
});
