/**
 * Several GPUs, property-based: random models (estimates, card counts, fixed lists, pinned
 * ones), random card counts and live ceilings that move, and random interleavings of requests,
 * swap ends and served requests through the real scheduler and the group policy. At the moment
 * of every swap: no chosen card's ceiling is exceeded by what stays plus the target's share, nothing
 * persistent or busy is evicted, and every eviction for room is on one of the chosen cards.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { Card } from "../../src/policy/cards.ts";
import { GroupPolicy } from "../../src/policy/group.ts";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import type { Swap } from "../../src/scheduler/types.ts";
import { QmError } from "../../src/shared/errors.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { FakeEffects } from "../support/fake-effects.ts";

interface ModelSpec {
  est: number;
  gpus: number | number[] | null;
  pinned: boolean;
}

const world = fc.integer({ min: 1, max: 4 }).chain((n) =>
  fc.record({
    ceilings: fc.array(fc.integer({ min: 6, max: 24 }), { minLength: n, maxLength: n }),
    models: fc.array(
      fc.record({
        est: fc.integer({ min: 1, max: 20 }),
        gpus: fc.oneof(
          fc.constant(null),
          fc.integer({ min: 1, max: n }),
          fc.uniqueArray(fc.nat(n - 1), { minLength: 1, maxLength: n }),
        ),
        pinned: fc.boolean().map((b) => b && Math.random() < 0.3),
      }),
      { minLength: 2, maxLength: 8 },
    ),
    ops: fc.array(
      fc.oneof(
        { arbitrary: fc.record({ t: fc.constant("req" as const), pick: fc.nat() }), weight: 6 },
        {
          arbitrary: fc.record({
            t: fc.constant("swapDone" as const),
            pick: fc.nat(),
            ok: fc.boolean(),
          }),
          weight: 4,
        },
        {
          arbitrary: fc.record({ t: fc.constant("serveDone" as const), pick: fc.nat() }),
          weight: 5,
        },
        {
          arbitrary: fc.record({
            t: fc.constant("ceiling" as const),
            card: fc.nat(n - 1),
            gb: fc.integer({ min: 4, max: 24 }),
          }),
          weight: 1,
        },
      ),
      { maxLength: 60 },
    ),
  }),
);

function toml(models: ModelSpec[]): string {
  const pinned = models.flatMap((m, i) => (m.pinned ? [`"m${i}"`] : []));
  const groups =
    pinned.length > 0
      ? `[groups.pin]\nmembers = [${pinned.join(", ")}]\npersistent = true\nexclusive = false\n\n`
      : "";
  return (
    groups +
    models
      .map((m, i) => {
        const gpus = m.gpus === null ? "" : `gpus = ${JSON.stringify(m.gpus)}\n`;
        return `[models.m${i}]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nest_vram_gb = ${m.est}\n${gpus}`;
      })
      .join("\n")
  );
}

describe("placement across several GPUs (property)", () => {
  test("no admission exceeds any card's ceiling; nothing persistent or busy is evicted; evictions only on the chosen cards", () => {
    fc.assert(
      fc.property(world, ({ ceilings, models, ops }) => {
        const cfg = config(toml(models));
        const cards: Card[] = ceilings.map((ceilingGb, index) => ({ index, ceilingGb }));
        const ids = models.map((_, i) => `m${i}`);
        const est = (id: string) => cfg.models[id]!.estVramGb;
        const violations: string[] = [];
        const pending: Swap[] = [];
        const granted: { req: number; model: string }[] = [];
        let sched!: Scheduler;
        const effects = new (class extends FakeEffects {
          override startSwap(swap: Swap): void {
            super.startSwap(swap);
            pending.push(swap);
            const gpus = swap.gpus;
            if (!gpus || gpus.length === 0) {
              violations.push(`swap of ${swap.target} has no placement`);
              return;
            }
            for (const v of swap.evict) {
              if (cfg.models[v]!.group === "pin") violations.push(`persistent ${v} evicted`);
              if (sched.inflightOf(v) > 0) violations.push(`busy ${v} evicted`);
              const on = sched.placementOf(v) ?? [];
              if ((swap.budget ?? []).includes(v) && !on.some((g) => gpus.includes(g))) {
                violations.push(`${v} on ${on} evicted for ${swap.target} on ${gpus}`);
              }
            }
            // The cards it lands on (a card whose ceiling dropped under what already runs there
            // is the shedding's business, not admission's).
            for (const card of cards.filter((c) => gpus.includes(c.index))) {
              let used = 0;
              for (const id of sched.runningLru()) {
                if (id === swap.target || swap.evict.includes(id)) continue;
                const on = sched.placementOf(id) ?? [];
                if (on.includes(card.index)) used += est(id) / on.length;
              }
              used += est(swap.target) / gpus.length;
              if (used > card.ceilingGb + 1e-9) {
                violations.push(`GPU ${card.index}: ${used} GB > ceiling ${card.ceilingGb} GB`);
              }
            }
          }
          override grant(requestId: number, model: string): boolean {
            granted.push({ req: requestId, model });
            return super.grant(requestId, model);
          }
        })();
        const policy = new GroupPolicy(cfg, {
          vramGb: () => cards.reduce((s, c) => s + c.ceilingGb, 0),
          ramGb: () => 0,
          cards: () => cards,
          placement: (id) => sched.placementOf(id),
        });
        sched = new Scheduler(cfg, policy, effects, new FakeClock());
        let nextReq = 1;
        for (const op of ops) {
          if (op.t === "req") {
            sched.request({ id: nextReq++, model: ids[op.pick % ids.length]!, holdMs: 0 });
          } else if (op.t === "swapDone" && pending.length > 0) {
            const swap = pending.splice(op.pick % pending.length, 1)[0]!;
            sched.swapDone(
              swap.id,
              op.ok
                ? { ok: true }
                : { ok: false, error: new QmError("upstream_start_failed", "x") },
            );
          } else if (op.t === "serveDone" && granted.length > 0) {
            const g = granted.splice(op.pick % granted.length, 1)[0]!;
            sched.serveDone(g.req);
          } else if (op.t === "ceiling") {
            cards[op.card] = { index: op.card, ceilingGb: op.gb };
          }
          if (violations.length > 0) return false;
        }
        // A placed model runs where its swap put it, on cards that exist.
        for (const id of sched.runningLru()) {
          const on = sched.placementOf(id);
          if (!on || on.some((g) => g >= cards.length)) return false;
          const want = cfg.models[id]!.gpus;
          if (Array.isArray(want) && JSON.stringify(on) !== JSON.stringify([...want].sort()))
            return false;
          if (typeof want === "number" && on.length !== want) return false;
        }
        expect(violations).toEqual([]);
        return true;
      }),
      { numRuns: 400 },
    );
  }, 60_000);
});
