import { GroupPolicy } from "../../src/policy/group.ts";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import { config } from "./config.ts";
import { FakeClock } from "./fake-clock.ts";
import { FakeEffects } from "./fake-effects.ts";

/** `models("a", "b")` → TOML for demo models with no port use. */
export function modelsToml(...ids: string[]): string {
  return ids
    .map((id) => `[models.${id}]\ncmd = "run ${id}"\nproxy = "http://127.0.0.1:9"\n`)
    .join("\n");
}

export function harness(toml: string) {
  const cfg = config(toml);
  const clock = new FakeClock(1000);
  const fx = new FakeEffects();
  const sched = new Scheduler(cfg, new GroupPolicy(cfg), fx, clock);
  let nextId = 1;
  return {
    cfg,
    clock,
    fx,
    sched,
    /** Sends a request and returns its id. */
    req(model: string): number {
      const id = nextId++;
      sched.request({ id, model });
      return id;
    },
    /** Completes the latest swap successfully. */
    finishSwap(ok = true): void {
      const s = fx.lastSwap();
      sched.swapDone(s.id, ok ? { ok: true } : { ok: false, error: new Error("x") as never });
    },
    state: (model: string) => sched.state(model),
  };
}
