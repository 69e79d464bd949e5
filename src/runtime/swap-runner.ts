/**
 * The slow half of the scheduler's effects: the process table, swaps (stop the evict set, ask
 * the spawn guard, start the target), stops outside swaps, and exits nobody asked for. Each
 * ends as a scheduler event. Invariants: ./design.md.
 */
import type { ModelConfig } from "../config/types.ts";
import type { GuardOptions } from "../gpu/gpu-watch.ts";
import type { ProcessView, SpawnVerdict } from "../gpu/index.ts";
import { exitError, type ProcessExit, type StopOptions } from "../process/index.ts";
import { type StopReason, stopReasonText } from "../scheduler/stop-reason.ts";
import type { Swap, SwapResult } from "../scheduler/types.ts";
import { asQmError, QmError } from "../shared/errors.ts";
import type { Logger } from "../shared/log.ts";
import { nextTurn } from "../shared/timer.ts";

/** What the runtime needs of a model's supervisor (`ModelProcess`; a fake in tests). */
export interface ModelServer extends ProcessView {
  /**
   * Resolves once the model is ready; rejects with a QmError when it cannot be. `gpus`: the
   * cards a process it spawns is placed on (several GPUs).
   */
  start(opts?: { gpus?: readonly number[] }): Promise<void>;
  /**
   * Resolves once the process is gone (at once when none runs). Idempotent. A ready `keep_kv`
   * model saves its slots first unless `save` is false. Rejects when the model may still hold
   * its memory (a managed node's unload that failed): a swap then does not start its target.
   */
  stop(opts?: StopOptions): Promise<void>;
  logs(): string[];
  stderrTail(lines?: number): string[];
  /**
   * Servers with a sleep API (`evict = "sleep"`): put the ready server to sleep / wake it,
   * the process kept; each rejects with a QmError when it cannot. Absent: cannot sleep.
   */
  sleep?(level: 1 | 2): Promise<void>;
  wake?(): Promise<void>;
  /** Asleep now (sleep() succeeded, no wake() or exit since). */
  readonly asleep?: boolean;
}

/** Makes the supervisor of `model`; `onExit` hears every exit that `stop()` did not ask for. */
export type ProcessFactory = (
  model: ModelConfig,
  onExit: (exit: ProcessExit) => void,
) => ModelServer;

/** The scheduler events a swap, a stop or an exit ends in. */
export interface SwapEvents {
  swapDone(swapId: number, result: SwapResult): void;
  stopped(model: string): void;
  /** A model asked to sleep outside a swap is asleep, or (false) was stopped instead. */
  slept(model: string, asleep: boolean): void;
  exited(model: string, error: QmError): void;
}

/** What the runner tells the metrics of sleeps and wakes. */
export interface SleepCounts {
  slept(model: string, ok: boolean): void;
  woke(model: string, result: "ok" | "cold"): void;
}

/** The spawn guard (`GpuWatch`): may a model start now, and memory qm let go of. */
export interface SpawnGate {
  guard(model: string, estimateGb: number, opts?: GuardOptions): Promise<SpawnVerdict>;
  noteReleased(): void;
}

export interface SwapRunnerDeps {
  log: Logger;
  /** The models as configured now: a start may have moved one to a free port. */
  models(): Readonly<Record<string, ModelConfig>>;
  events: SwapEvents;
  gpu: SpawnGate;
  makeProcess: ProcessFactory;
  counts?: SleepCounts;
  /** A swap started, spawned its target or ended (prefetch's plan). */
  onSwap?(): void;
}

/** A swap in progress. */
interface SwapRun {
  readonly target: string;
  /** Why it was aborted, or null: its target then must not start, or is stopped. */
  abortedFor: string | null;
  /** Its target's start (or wake) has been called. */
  spawned: boolean;
}

export class SwapRunner {
  private readonly processes = new Map<string, ModelServer>();
  /** Swaps in progress, by swap id. */
  private readonly swaps = new Map<number, SwapRun>();
  /** Set by stopAll: no target starts after shutdown stopped everything. */
  private closed = false;

  constructor(private readonly deps: SwapRunnerDeps) {}

  /** Adds the supervisor of a configured model or a minted variant. */
  add(model: ModelConfig): void {
    const onExit = (exit: ProcessExit) => this.onExit(model.id, exit);
    this.processes.set(model.id, this.deps.makeProcess(model, onExit));
  }

  /** Forgets the supervisor of a model removed from the config (once it is down). */
  remove(id: string): void {
    this.processes.delete(id);
  }

  get(id: string): ModelServer | undefined {
    return this.processes.get(id);
  }

  /** Every supervisor, by model id. */
  all(): ReadonlyMap<string, ModelServer> {
    return this.processes;
  }

  /**
   * `Effects.startSwap`: reports back with exactly one `swapDone(swap.id, …)`. `clientTold`: a
   * client waits for the bytes that announced this swap (a cold stream's placeholder); the
   * swap's synchronous work — the stops, the spawn, milliseconds of it — waits for the event
   * loop's next turn, so those bytes go out first.
   */
  startSwap(swap: Swap, clientTold = false): void {
    const { log } = this.deps;
    const on = swap.gpus ? ` on GPU ${swap.gpus.join(",")}` : "";
    if (swap.evict.length > 0) {
      log.info(`swap: stopping ${swap.evict.join(", ")} to start ${swap.target}${on}`);
    } else {
      log.info(`swap: starting ${swap.target}${on}`);
    }
    const run: SwapRun = { target: swap.target, abortedFor: null, spawned: false };
    this.swaps.set(swap.id, run);
    this.deps.onSwap?.();
    void this.run(swap, run, clientTold);
  }

  /** Targets of swaps in progress not started yet (evictions stopping, the spawn guard), oldest first. */
  waitingTargets(): string[] {
    const out: string[] = [];
    for (const run of this.swaps.values()) if (!run.spawned) out.push(run.target);
    return out;
  }

  /**
   * `Effects.abortSwap`: the target of swap `swapId` must not start, or is stopped if it has;
   * the swap then reports `swapDone(swapId, {ok: false, error: model_unloaded})` once the target
   * is down. No `stopped()` follows. Unknown or finished swaps are ignored.
   */
  abortSwap(swapId: number, reason: string): void {
    const run = this.swaps.get(swapId);
    if (!run || run.abortedFor !== null) return;
    this.deps.log.info(`stopping ${run.target} (${reason})`);
    run.abortedFor = reason;
    this.processes
      .get(run.target)!
      .stop()
      .catch((err) => this.deps.log.warn(`stopping ${run.target}: ${errorText(err)}`));
  }

  /** `Effects.stopModels`: stops each model; reports each with `stopped(model)`. */
  stopModels(models: string[], reason: StopReason): void {
    this.deps.log.info(`stopping ${models.join(", ")} (${stopReasonText(reason)})`);
    for (const id of models) {
      void this.processes
        .get(id)!
        .stop()
        .catch((err) => this.deps.log.warn(`stopping ${id}: ${errorText(err)}`))
        .finally(() => {
          this.deps.gpu.noteReleased();
          this.deps.events.stopped(id);
        });
    }
  }

  /**
   * `Effects.sleepModels`: puts each model to sleep (one that will not sleep is stopped);
   * reports each with `slept(model, asleep)`.
   */
  sleepModels(models: string[], reason: StopReason): void {
    this.deps.log.info(`putting ${models.join(", ")} to sleep (${stopReasonText(reason)})`);
    for (const id of models) {
      void this.putToSleep(id).then((asleep) => {
        this.deps.gpu.noteReleased();
        this.deps.events.slept(id, asleep);
      });
    }
  }

  /**
   * Puts `id` to sleep at its `sleep_level`; true once it is asleep. A server that cannot
   * sleep (no sleep API, an error, no answer in time) is stopped instead: false.
   */
  private async putToSleep(id: string): Promise<boolean> {
    const proc = this.processes.get(id)!;
    const level = this.deps.models()[id]?.sleepLevel ?? 1;
    try {
      if (!proc.sleep) throw new Error("its server has no sleep API");
      await proc.sleep(level);
      this.deps.counts?.slept(id, true);
      this.deps.log.info(`model ${id}: asleep (level ${level}, pid ${proc.pid ?? "?"})`);
      return true;
    } catch (err) {
      this.deps.counts?.slept(id, false);
      this.deps.log.warn(`model ${id}: ${errorText(err)}; stopping it instead`);
      await proc.stop().catch((e) => this.deps.log.error(`stopping ${id}: ${String(e)}`));
      return false;
    }
  }

  /** Stops every model process (shutdown); resolves when all are gone. */
  async stopAll(): Promise<void> {
    this.closed = true;
    // Shutdown saves no KV cache: it is bounded by shutdown_timeout_s (src/process/design.md).
    await Promise.all([...this.processes.values()].map((p) => p.stop({ save: false })));
  }

  private async run(swap: Swap, run: SwapRun, clientTold: boolean): Promise<void> {
    const { gpu, log, events } = this.deps;
    const target = this.processes.get(swap.target)!;
    /** Why the target must not start now, or null. */
    const blocked = (): QmError | null => {
      if (run.abortedFor !== null) return unloaded(swap.target);
      if (this.closed) {
        return new QmError(
          "shutting_down",
          `qm is shutting down: model "${swap.target}" was not started`,
        );
      }
      return null;
    };
    let result: SwapResult;
    const toSleep = new Set(swap.sleep ?? []);
    const asleep: string[] = [];
    try {
      if (clientTold) await nextTurn();
      await Promise.all(
        swap.evict.map(async (id) => {
          if (!toSleep.has(id)) return this.processes.get(id)!.stop();
          if (await this.putToSleep(id)) asleep.push(id);
        }),
      );
      let stop = blocked();
      if (stop) throw stop;
      // The spawn guard: with what the card really has free now, can the target load?
      const model = this.deps.models()[swap.target]!;
      // A managed node's model loads on the node's GPU, not this box's.
      if (!model.node) {
        const verdict = await gpu.guard(swap.target, model.estVramGb, {
          evicted: swap.evict,
          ...(swap.gpus ? { gpus: swap.gpus } : {}),
        });
        if (!verdict.ok) throw new QmError("cannot_fit", verdict.message);
      }
      // Checked right before the start, with no await between: an abort up to here keeps the
      // target from spawning at all; one after it stops what started.
      stop = blocked();
      if (stop) throw stop;
      run.spawned = true;
      this.deps.onSwap?.();
      if (swap.wake) await this.wakeOrRestart(swap.target, target, run, swap.gpus);
      else await target.start(swap.gpus ? { gpus: swap.gpus } : {});
      result = { ok: true, asleep };
    } catch (err) {
      result = { ok: false, error: asQmError(err), asleep };
    }
    if (!result.ok && result.error.detail) {
      log.warn(`model "${swap.target}": ${result.error.detail}`);
    }
    if (run.abortedFor !== null) {
      // Whatever the start did, the report waits until the target is down (and always comes).
      await target.stop().catch((err) => log.error(`stopping ${swap.target}: ${String(err)}`));
      if (run.spawned) gpu.noteReleased();
      result = { ok: false, error: unloaded(swap.target), asleep };
    }
    this.swaps.delete(swap.id);
    this.deps.onSwap?.();
    events.swapDone(swap.id, result);
  }

  /**
   * Wakes a sleeping target; should that fail (an error, no answer in time, the process gone),
   * it is restarted cold: stopped, then started, as a swap would start it.
   */
  private async wakeOrRestart(
    id: string,
    target: ModelServer,
    run: SwapRun,
    gpus?: readonly number[],
  ): Promise<void> {
    const { log } = this.deps;
    try {
      if (!target.wake) throw new Error("its server has no sleep API");
      await target.wake();
      this.deps.counts?.woke(id, "ok");
      log.info(`model ${id}: awake (pid ${target.pid ?? "?"})`);
      return;
    } catch (err) {
      log.warn(`model ${id}: ${errorText(err)}; restarting it cold`);
    }
    await target.stop();
    if (run.abortedFor !== null) throw unloaded(id);
    this.deps.counts?.woke(id, "cold");
    await target.start(gpus ? { gpus } : {});
  }

  private onExit(id: string, exit: ProcessExit): void {
    // The report names the model and how it ended; the supervisor has logged the tail.
    this.deps.events.exited(id, exitError(id, exit));
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function unloaded(model: string): QmError {
  return new QmError("model_unloaded", `model "${model}" was unloaded while it was loading`);
}
