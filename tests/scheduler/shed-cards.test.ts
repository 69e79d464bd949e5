/** Several GPUs: shedding card by card, against each card's own ceiling. */
import { expect, test } from "bun:test";
import { GroupPolicy } from "../../src/policy/group.ts";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { FakeEffects } from "../support/fake-effects.ts";

const TOML = ["a", "b", "c"]
  .map((id) => `[models.${id}]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nest_vram_gb = 8\n`)
  .join("");

test("a card whose ceiling dropped sheds its own idle models only, even while the box's sum fits", () => {
  const cfg = config(TOML);
  const cards = [
    { index: 0, ceilingGb: 10 },
    { index: 1, ceilingGb: 10 },
  ];
  const fx = new FakeEffects();
  let sched!: Scheduler;
  const policy = new GroupPolicy(cfg, {
    vramGb: () => 20,
    ramGb: () => 0,
    cards: () => cards,
    placement: (id) => sched.placementOf(id),
  });
  sched = new Scheduler(cfg, policy, fx, new FakeClock());
  sched.request({ id: 1, model: "a", holdMs: 0 });
  sched.swapDone(fx.lastSwap().id, { ok: true });
  sched.request({ id: 2, model: "b", holdMs: 0 });
  sched.swapDone(fx.lastSwap().id, { ok: true });
  expect([sched.placementOf("a"), sched.placementOf("b")]).toEqual([[0], [1]]);
  sched.serveDone(1);
  sched.serveDone(2);
  // Card 1 loses 4 GB to another program: 16 GB of estimates still fit the box's 16.
  const dropped = [cards[0]!, { index: 1, ceilingGb: 6 }];
  sched.shed(16, dropped);
  expect(fx.stops).toEqual([["b"]]);
  sched.stopped("b");
  expect(sched.placementOf("b")).toBeUndefined();
  expect(sched.placementOf("a")).toEqual([0]);
  // Without cards the box-wide rule decides, as before: 8 GB ≤ 16, nothing more.
  sched.shed(16);
  expect(fx.stops).toEqual([["b"]]);
});
