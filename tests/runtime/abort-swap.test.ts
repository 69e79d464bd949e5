import { describe, expect, test } from "bun:test";
import type { ModelConfig } from "../../src/config/types.ts";
import type { ModelProcess } from "../../src/process/index.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { QmError } from "../../src/shared/errors.ts";
import { createLogger } from "../../src/shared/log.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { modelsToml } from "../support/harness.ts";

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(err: Error): void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A model process whose start and stop the test finishes by hand. */
class FakeProcess {
  starts = 0;
  stops = 0;
  running = false;
  private starting: Deferred | null = null;
  private stopping: Deferred | null = null;

  start(): Promise<void> {
    this.starts++;
    this.running = true;
    this.starting = deferred();
    return this.starting.promise;
  }
  stop(): Promise<void> {
    this.stops++;
    if (!this.running) return Promise.resolve();
    this.stopping ??= deferred();
    return this.stopping.promise;
  }
  ready(): void {
    this.starting!.resolve();
  }
  /** What a real start does once its process is stopped under it. */
  cancelStart(): void {
    this.starting!.reject(new QmError("cancelled", "it was stopped before it became ready"));
  }
  exitAfterStop(): void {
    this.running = false;
    this.stopping?.resolve();
    this.stopping = null;
  }
  logs(): string[] {
    return [];
  }
  stderrTail(): string[] {
    return [];
  }
}

/** Everything queued behind a macrotask boundary has run: the runtime's awaits have settled. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function setup() {
  const cfg = config(`[resources]\ngpu_probe = "off"\n${modelsToml("a", "b")}`);
  const procs = new Map<string, FakeProcess>();
  const lines: string[] = [];
  const rt = new Runtime(cfg, {
    clock: new FakeClock(0),
    log: createLogger("info", (l) => lines.push(l)),
    makeProcess: (model: ModelConfig) => {
      const p = new FakeProcess();
      procs.set(model.id, p);
      return p as unknown as ModelProcess;
    },
  });
  const swapDones: { id: number; ok: boolean; code?: string }[] = [];
  const stopped: string[] = [];
  const sched = rt.scheduler;
  const swapDone = sched.swapDone.bind(sched);
  sched.swapDone = (id, result) => {
    swapDones.push(result.ok ? { id, ok: true } : { id, ok: false, code: result.error.code });
    swapDone(id, result);
  };
  const stoppedFn = sched.stopped.bind(sched);
  sched.stopped = (model) => {
    stopped.push(model);
    stoppedFn(model);
  };
  /** Asks for a model; `outcome()` is "granted", an error code, or "waiting". */
  const ask = (id: string) => {
    let outcome = "waiting";
    void rt.acquire(cfg.models[id]!, new AbortController().signal).then(
      (lease) => {
        outcome = "granted";
        lease.release();
      },
      (err: QmError) => {
        outcome = err.code;
      },
    );
    return () => outcome;
  };
  const logged = (text: string) => lines.filter((l) => l.endsWith(text)).length;
  return {
    rt,
    a: () => procs.get("a")!,
    b: () => procs.get("b")!,
    swapDones,
    stopped,
    ask,
    logged,
  };
}

describe("Runtime.abortSwap", () => {
  test("an abort that lands before the evictions finish keeps the target from starting", async () => {
    const { rt, a, b, swapDones, stopped, ask, logged } = setup();
    const first = ask("b");
    await settle();
    b().ready();
    await settle();
    expect(first()).toBe("granted");
    const waiter = ask("a"); // evicts b
    await settle();
    expect(b().stops).toBe(1);
    rt.unload("a");
    expect(logged("stopping a (unload)")).toBe(1);
    b().exitAfterStop();
    await settle();
    expect(a().starts).toBe(0);
    expect(swapDones).toEqual([
      { id: 1, ok: true },
      { id: 2, ok: false, code: "model_unloaded" },
    ]);
    expect(waiter()).toBe("model_unloaded");
    expect(rt.modelState("a")).toBe("stopped");
    expect(rt.modelState("b")).toBe("stopped");
    expect(stopped).toEqual([]);
  });

  test("an abort during start stops the process; one swapDone, once the target is down", async () => {
    const { rt, a, swapDones, stopped, ask } = setup();
    const waiter = ask("a");
    await settle();
    expect(a().starts).toBe(1);
    rt.unload("a");
    expect(a().stops).toBe(1);
    a().cancelStart();
    await settle();
    expect(swapDones).toEqual([]); // its process is still going down
    a().exitAfterStop();
    await settle();
    expect(swapDones).toEqual([{ id: 1, ok: false, code: "model_unloaded" }]);
    expect(waiter()).toBe("model_unloaded");
    expect(rt.modelState("a")).toBe("stopped");
    expect(stopped).toEqual([]);
  });

  test("a start that succeeds after the abort is stopped and still fails the swap once", async () => {
    const { rt, a, swapDones, ask } = setup();
    const waiter = ask("a");
    await settle();
    rt.unload("a");
    a().ready(); // the abort raced the readiness check and lost
    await settle();
    expect(swapDones).toEqual([]);
    a().exitAfterStop();
    await settle();
    expect(swapDones).toEqual([{ id: 1, ok: false, code: "model_unloaded" }]);
    expect(a().running).toBe(false);
    expect(waiter()).toBe("model_unloaded");
    expect(rt.modelState("a")).toBe("stopped");
  });

  test("unloading twice aborts once", async () => {
    const { rt, a, swapDones, ask, logged } = setup();
    ask("a");
    await settle();
    rt.unload("a");
    rt.unload("a");
    rt.unload(null);
    expect(a().stops).toBe(1);
    expect(logged("stopping a (unload)")).toBe(1);
    a().cancelStart();
    a().exitAfterStop();
    await settle();
    expect(swapDones).toHaveLength(1);
  });

  test("a request after the abort waits for it, then starts the model afresh", async () => {
    const { rt, a, swapDones, ask } = setup();
    const first = ask("a");
    await settle();
    rt.unload("a");
    const second = ask("a");
    await settle();
    expect(a().starts).toBe(1);
    a().cancelStart();
    a().exitAfterStop();
    await settle();
    expect(first()).toBe("model_unloaded");
    expect(second()).toBe("waiting");
    expect(a().starts).toBe(2);
    a().ready();
    await settle();
    expect(second()).toBe("granted");
    expect(swapDones).toEqual([
      { id: 1, ok: false, code: "model_unloaded" },
      { id: 2, ok: true },
    ]);
  });
});
