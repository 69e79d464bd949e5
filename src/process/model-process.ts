/**
 * Supervises one model server process: make sure its port is free (start-guard.ts), spawn
 * it in its own process group, wait until its health endpoint answers 200, stop it and all
 * it started (tree-watch.ts) gracefully (cmd_stop or SIGTERM, SIGKILL after
 * `stop_timeout_s`), and report exits nobody asked for. Invariants: ./design.md.
 */
import type { ModelConfig } from "../config/types.ts";
import { QmError } from "../shared/errors.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Logger } from "../shared/log.ts";
import { RingBuffer } from "../shared/ring-buffer.ts";
import { realTimers, type Timers, within } from "../shared/timer.ts";
import {
  describeStatus,
  exitError,
  exitReport,
  formatTail,
  type ProcessExit,
  stoppedWhileStarting,
} from "./exit-info.ts";
import { type HealthOutcome, ProbeNudge, probeTiming, waitHealthy } from "./health.ts";
import { KvSlots } from "./kv-slots.ts";
import { killLeftovers, signalTree } from "./leftovers.ts";
import { pumpLines } from "./line-splitter.ts";
import { claimPort, portOf } from "./port-guard.ts";
import { trackGroup, untrackGroup } from "./process-group.ts";
import { sleepServer, wakeServer } from "./sleep-api.ts";
import { type ModelSubprocess, spawnModel, withGpuIds } from "./spawn.ts";
import { freePortFor, ownershipCheck } from "./start-guard.ts";
import { STDIO_DRAIN_MS } from "./stop-command.ts";
import { terminate } from "./terminate.ts";
import { tree } from "./tree-watch.ts";

export type ProcessState = "stopped" | "starting" | "ready" | "stopping";

export interface ModelProcessOptions {
  healthCheckTimeoutS: number;
  log: Logger;
  /** Every exit not asked for by `stop()` (a crash while loading or serving). */
  onExit?: (exit: ProcessExit) => void;
  onStateChange?: (state: ProcessState) => void;
  /** Readiness poll interval; default 10 ms. */
  pollIntervalMs?: number;
  /** How long this model's loads take (the median of its last); probes come closer near it (health.ts). */
  expectedLoadMs?: () => number | null;
  /** Told every output line as it comes (live log followers). */
  onLine?: (line: string) => void;
  /** Lines kept by `logs()`; default 500. */
  logLines?: number;
  /** The model was re-rendered (moved to a free port) before a start: requests follow it. */
  onConfigChange?: (model: ModelConfig) => void;
  /**
   * Every limit and wait of qm's own (readiness poll and deadline, stop escalation, sleep and
   * `/slots` calls, output drain) runs on these; default real. Tests move a fake clock.
   */
  timers?: Timers;
  /** The health checks, the sleep API and `keep_kv`'s `/slots` calls; default the global fetch. */
  fetch?: Fetch;
}

export interface StopOptions {
  /** `keep_kv`: save the slots of a ready model first (default true; shutdown says false). */
  save?: boolean;
}

/** Lines of stderr carried in exits and error messages. */
export const STDERR_TAIL_LINES = 10;

interface Run {
  readonly model: ModelConfig;
  readonly proc: ModelSubprocess;
  readonly pid: number;
  /** The leader's start time (/proc), -1 when unknown. */
  readonly start: number;
  readonly startedAt: number;
  readonly stderr: RingBuffer<string>;
  /** The model's `keep_kv` slots, or null. */
  readonly kv: KvSlots | null;
  readonly nudge: ProbeNudge;
  /** Ends the readiness poll (stop, exit or its outcome). */
  readonly abort: AbortController;
  /** Set by stop(): its exit is expected and is not reported through onExit. */
  stopRequested: boolean;
  /** Set synchronously when the process is reaped, before its output is drained. */
  exited: boolean;
  exit: Promise<ProcessExit>;
  signal(signal: NodeJS.Signals): void;
}

export class ModelProcess {
  private model: ModelConfig;
  private _state: ProcessState = "stopped";
  private _asleep = false;
  private run: Run | null = null;
  private starting: Promise<void> | null = null;
  private stopping: Promise<void> | null = null;
  /** An exit nobody asked for, reported (stopped) but still draining output and children. */
  private draining: Promise<unknown> | null = null;
  private readonly lines: RingBuffer<string>;
  private lastStderr = new RingBuffer<string>(STDERR_TAIL_LINES * 5);
  /** The cards the next spawn is placed on (several GPUs); undefined = the box as is. */
  private gpus: readonly number[] | undefined;
  /** The cards the running process was placed on. */
  private placedOn: readonly number[] | undefined;
  private readonly timers: Timers;

  constructor(
    model: ModelConfig,
    private readonly opts: ModelProcessOptions,
  ) {
    this.model = model;
    claimPort(model);
    this.lines = new RingBuffer(opts.logLines ?? 500);
    this.timers = opts.timers ?? realTimers;
  }

  get id(): string {
    return this.model.id;
  }

  get state(): ProcessState {
    return this._state;
  }

  get pid(): number | null {
    return this.run?.pid ?? null;
  }

  /** Put to sleep over the server's sleep API (`sleep`), until `wake` or the process ends. */
  get asleep(): boolean {
    return this._asleep;
  }

  /**
   * Puts the ready server to sleep (`POST /sleep?level=N`, confirmed by `GET /is_sleeping`);
   * the process stays. Rejects with a QmError when it is not running or will not sleep.
   */
  async sleep(level: 1 | 2): Promise<void> {
    const run = this.readyRun("sleep");
    await sleepServer(this.sleepCall(run), level);
    if (this.run === run) this._asleep = true;
  }

  /** Wakes a sleeping server (`POST /wake_up`, confirmed); rejects as `sleep` does. */
  async wake(): Promise<void> {
    const run = this.readyRun("wake");
    await wakeServer(this.sleepCall(run));
    if (this.run === run) this._asleep = false;
  }

  /** The run a sleep or a wake acts on: a ready one, or a QmError. */
  private readyRun(verb: "sleep" | "wake"): Run {
    if (this.run !== null && this._state === "ready") return this.run;
    const why = `model "${this.id}" is not running: it cannot ${verb}`;
    throw new QmError("upstream_start_failed", why);
  }

  private sleepCall(run: Run) {
    const { fetch } = this.opts;
    const timeoutMs = this.opts.healthCheckTimeoutS * 1000;
    return { model: run.model.id, base: run.model.proxy, timeoutMs, timers: this.timers, fetch };
  }

  /** The cards the running process was placed on; undefined without a placement. */
  get placement(): readonly number[] | undefined {
    return this.run === null ? undefined : this.placedOn;
  }

  /** Recent stdout and stderr lines, oldest first, across restarts. */
  logs(): string[] {
    return this.lines.toArray();
  }

  /** The last `n` stderr lines of the current (or last) run. */
  stderrTail(n = STDERR_TAIL_LINES): string[] {
    return this.lastStderr.tail(n);
  }

  /** Takes effect at the next spawn; a running process keeps the config it started with. */
  setConfig(model: ModelConfig): void {
    this.model = model;
    claimPort(model);
  }

  /**
   * Spawns the model and resolves once it is ready. Joins a start in progress; waits for
   * a stop in progress first. Rejects with `upstream_start_failed` (it exited or could not
   * run), `upstream_start_timeout` (stopped again), or `cancelled` (stop() was called).
   * `opts.gpus`: the cards a spawn it makes is placed on (`${GPU_IDS}`, `CUDA_VISIBLE_DEVICES`).
   */
  start(opts: { gpus?: readonly number[] } = {}): Promise<void> {
    if (opts.gpus !== undefined) this.gpus = [...opts.gpus];
    if (this._state === "ready") return Promise.resolve();
    if (this.starting !== null) return this.starting;
    if (this.stopping !== null) return this.stopping.then(() => this.start());
    // The last crash's leftovers may still hold the port; let them go first.
    if (this.draining !== null) return this.draining.then(() => this.start());
    const started = this.startRun().finally(() => {
      if (this.starting === started) this.starting = null;
    });
    this.starting = started;
    return started;
  }

  /**
   * Stops the process group; resolves once the process has exited. Idempotent. A ready
   * `keep_kv` model saves its slots first (bounded), unless `save` is false.
   */
  stop(opts: StopOptions = {}): Promise<void> {
    if (this.stopping !== null) return this.stopping;
    const run = this.run;
    if (run === null) return this.draining?.then(() => {}) ?? Promise.resolve();
    const save = run.kv !== null && opts.save !== false && this._state === "ready";
    const stopping = (save ? this.saveThenTerminate(run) : this.terminate(run)).finally(() => {
      if (this.stopping === stopping) this.stopping = null;
    });
    this.stopping = stopping;
    return stopping;
  }

  private async startRun(): Promise<void> {
    const guard = { log: this.opts.log, ownerOf: (pid: number) => tree.ownerOf(pid) };
    const free = freePortFor(this.model, guard);
    if (free !== this.model) {
      this.model = free;
      this.opts.onConfigChange?.(free);
    }
    const run = this.spawn(free);
    const { model } = run;
    const checkOwner = ownershipCheck(model, run.pid, run.start, guard);
    const outcome: HealthOutcome | { kind: "exit" } = await Promise.race([
      model.checkEndpoint === null
        ? Promise.resolve<HealthOutcome>({ kind: "ready" })
        : waitHealthy({
            url: model.proxy + model.checkEndpoint,
            intervalMs: this.opts.pollIntervalMs ?? 10,
            deadline: run.startedAt + this.opts.healthCheckTimeoutS * 1000,
            signal: run.abort.signal,
            timers: this.timers,
            fetch: this.opts.fetch,
            onAnswer: () => void checkOwner(),
            nudge: run.nudge,
            ...probeTiming(run.startedAt, this.opts.expectedLoadMs?.() ?? null),
          }),
      run.exit.then(() => ({ kind: "exit" }) as const),
    ]);
    run.abort.abort();
    if (run.stopRequested) throw stoppedWhileStarting(model.id);
    // A 200 from a process that already died came from someone else on that port.
    if (outcome.kind === "exit" || (outcome.kind === "ready" && run.exited)) {
      // Whatever the supervisor's state when it was reaped, this start is what it ended.
      throw exitError(model.id, { ...(await run.exit), phase: "starting" }, model.cmd);
    }
    if (outcome.kind === "timeout") {
      const s = this.opts.healthCheckTimeoutS;
      this.opts.log.warn(`model "${model.id}" not ready after ${s} s; stopping it`);
      await this.stop();
      const detail = formatTail(run.stderr.tail(STDERR_TAIL_LINES));
      throw new QmError(
        "upstream_start_timeout",
        `model "${model.id}" did not become ready within ${s} s ` +
          `(GET ${model.checkEndpoint}: ${outcome.lastProbe}); ` +
          `raise server.health_check_timeout_s if it loads slowly; its output is at /api/models/${model.id}/logs`,
        { detail },
      );
    }
    if (model.checkEndpoint !== null) {
      // The 200 must have come from the model: a stranger may have bound the port since.
      const foreign = await checkOwner();
      if (run.stopRequested) throw stoppedWhileStarting(model.id);
      if (foreign) {
        this.opts.log.warn(foreign.message);
        await this.stop();
        throw foreign;
      }
    }
    if (run.kv !== null) {
      // Before start() resolves, so before the first waiter is granted; never fails the start.
      await run.kv.restore(model.proxy);
      if (run.stopRequested || run.exited) throw stoppedWhileStarting(model.id);
    }
    const ms = Math.round(this.timers.now() - run.startedAt);
    this.opts.log.info(`model "${model.id}" ready in ${ms} ms (pid ${run.pid})`);
    this.setState("ready");
    tree.scanSoon(); // its descendants now, once the first grants have gone out
  }

  private spawn(model: ModelConfig): Run {
    const { log, fetch } = this.opts;
    const kv = model.keepKv
      ? new KvSlots(model.id, model.keepKv, { log, fetch, timers: this.timers })
      : null;
    // The folder exists, and holds no other config's files, before the server starts.
    kv?.prepare();
    // The mark lets qm recognise the model's descendants wherever they end up.
    this.placedOn = this.gpus;
    const proc = spawnModel(model, tree.marker(model.id), this.gpus);
    // Record the group before anything can await, so killAllSync always sees it.
    trackGroup(proc.pid);
    const leader = tree.register(model.id, proc.pid, portOf(model)?.port ?? null);
    const stderr = new RingBuffer<string>(STDERR_TAIL_LINES * 5);
    this.lastStderr = stderr;
    // A line printed may say the server listens now: probe it at once (health.ts).
    const nudge = new ProbeNudge();
    const pumps = Promise.all([
      pumpLines(proc.stdout, (line) => this.onLine(model.id, line, nudge)),
      pumpLines(proc.stderr, (line) => this.onLine(model.id, line, nudge, stderr)),
    ]);
    const run: Run = {
      // `${GPU_IDS}` in cmd_stop and env reads what this spawn was placed on, as its argv does.
      model: withGpuIds(model, this.gpus),
      proc,
      pid: proc.pid,
      start: leader.start,
      startedAt: this.timers.now(),
      stderr,
      kv,
      nudge,
      abort: new AbortController(),
      stopRequested: false,
      exited: false,
      exit: undefined as unknown as Promise<ProcessExit>, // set below: it needs `run`
      signal: (signal) => signalTree(proc.pid, signal),
    };
    run.exit = proc.exited.then(() => this.onProcessExit(run, pumps));
    this.run = run;
    this.opts.log.info(`starting model "${model.id}" (pid ${run.pid}): ${model.cmd}`);
    this.setState("starting");
    return run;
  }

  private async onProcessExit(run: Run, pumps: Promise<unknown>): Promise<ProcessExit> {
    run.exited = true;
    const current = this.run === run;
    const phase = current && this._state !== "stopped" ? this._state : "stopping";
    untrackGroup(run.pid);
    // The leader is gone; take down anything it left behind, in its group or outside it (no
    // orphans holding GPU memory or the port).
    const leftovers = killLeftovers(run.pid);
    if (current) {
      this.run = null;
      this.draining = run.exit;
      this.setState("stopped");
    }
    // Pipes close once the leftovers are gone; bounded in case one we cannot kill has them.
    await Promise.all([within(pumps, STDIO_DRAIN_MS, this.timers), leftovers]);
    if (this.draining === run.exit) this.draining = null;
    const { exitCode: code, signalCode } = run.proc;
    const exit: ProcessExit = {
      code,
      signal: signalCode === null ? null : String(signalCode),
      stderrTail: run.stderr.tail(STDERR_TAIL_LINES),
      phase,
    };
    if (run.stopRequested) {
      this.opts.log.info(`model "${run.model.id}" stopped (${describeStatus(exit)})`);
    } else {
      this.opts.log.warn(exitReport(run.model.id, exit).log);
      try {
        this.opts.onExit?.(exit);
      } catch (err) {
        this.opts.log.error(`onExit handler for model "${run.model.id}" threw: ${String(err)}`);
      }
    }
    return exit;
  }

  /** `keep_kv`: the slots are saved (bounded, never failing), then the process is stopped. */
  private async saveThenTerminate(run: Run): Promise<void> {
    run.stopRequested = true;
    run.abort.abort();
    this.setState("stopping");
    if (!run.exited) await run.kv!.save(run.model.proxy);
    await this.terminate(run);
  }

  private terminate(run: Run): Promise<void> {
    run.stopRequested = true;
    run.abort.abort();
    this.setState("stopping");
    // Each signal reads the process table after the group's (signalTree): a descendant
    // started since the last scan gets it too.
    return terminate(run, this.opts.log, (line) => this.onLine(run.model.id, line), this.timers);
  }

  private onLine(id: string, line: string, nudge?: ProbeNudge, stderr?: RingBuffer<string>) {
    nudge?.now();
    stderr?.push(line);
    this.lines.push(line);
    this.opts.onLine?.(line);
    if (this.opts.log.enabled("debug")) this.opts.log.debug(`[${id}] ${line}`);
  }

  private setState(state: ProcessState): void {
    if (state !== "ready") this._asleep = false;
    if (this._state === state) return;
    this._state = state;
    this.opts.onStateChange?.(state);
  }
}
