/**
 * A model supervisor without a process: its start and stop stay pending until the test
 * settles them, and it crashes when told, reporting like `ModelProcess` does (onExit for an
 * exit nobody asked for; a start that a stop interrupts rejects with `cancelled`).
 */
import type { ModelConfig } from "../../src/config/types.ts";
import { exitError, type ProcessExit } from "../../src/process/exit-info.ts";
import type { ProcessState } from "../../src/process/model-process.ts";
import type { ModelServer, ProcessFactory } from "../../src/runtime/swap-runner.ts";
import { QmError } from "../../src/shared/errors.ts";

interface Pending {
  promise: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

function pending(): Pending {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A rejection nobody awaits (the runtime drops a cancelled start) is not an error here.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

let nextPid = 1000;

export class FakeServer implements ModelServer {
  state: ProcessState = "stopped";
  pid: number | null = null;
  /** How often start() spawned and stop() was asked for. */
  starts = 0;
  stops = 0;
  stderr: string[] = [];
  /** Sleep API: asleep now; the levels sleep() was asked for; how often wake() was asked. */
  asleep = false;
  sleepLevels: number[] = [];
  wakes = 0;
  /** The test: the next sleep() / wake() rejects with this (then it is cleared). */
  sleepError: QmError | null = null;
  wakeError: QmError | null = null;
  private starting: Pending | null = null;
  private stopping: Pending | null = null;

  constructor(
    readonly model: ModelConfig,
    private readonly onExit: (exit: ProcessExit) => void,
  ) {}

  start(): Promise<void> {
    if (this.state === "ready") return Promise.resolve();
    if (this.starting) return this.starting.promise;
    if (this.stopping) return this.stopping.promise.then(() => this.start());
    this.starts++;
    this.state = "starting";
    this.pid = nextPid++;
    this.starting = pending();
    return this.starting.promise;
  }

  stop(): Promise<void> {
    this.stops++;
    if (this.stopping) return this.stopping.promise;
    if (this.state === "stopped") return Promise.resolve();
    this.state = "stopping";
    this.stopping = pending();
    this.settleStart(
      new QmError("cancelled", `loading model "${this.model.id}" was cancelled: it was stopped`),
    );
    return this.stopping.promise;
  }

  sleep(level: 1 | 2): Promise<void> {
    this.sleepLevels.push(level);
    const err = this.sleepError;
    this.sleepError = null;
    if (err) return Promise.reject(err);
    if (this.state !== "ready")
      return Promise.reject(new QmError("upstream_start_failed", "not running"));
    this.asleep = true;
    return Promise.resolve();
  }

  wake(): Promise<void> {
    this.wakes++;
    const err = this.wakeError;
    this.wakeError = null;
    if (err) return Promise.reject(err);
    if (this.state !== "ready")
      return Promise.reject(new QmError("upstream_start_failed", "not running"));
    this.asleep = false;
    return Promise.resolve();
  }

  /** The test: the model answered its health check. */
  ready(): void {
    if (!this.starting) throw new Error(`${this.model.id} is not starting`);
    this.state = "ready";
    this.settleStart(null);
  }

  /** The test: the stop asked for is done, the process gone. */
  stopped(): void {
    if (!this.stopping) throw new Error(`${this.model.id} is not stopping`);
    const s = this.stopping;
    this.stopping = null;
    this.gone();
    s.resolve();
  }

  /** The test: the process exits on its own (while loading or serving). */
  crash(exit: Partial<Omit<ProcessExit, "phase">> = {}): ProcessExit {
    const phase = this.state === "starting" ? "starting" : "ready";
    const full: ProcessExit = { code: 1, signal: null, stderrTail: this.stderr, phase, ...exit };
    this.gone();
    this.onExit(full);
    if (phase === "starting") this.settleStart(exitError(this.model.id, full, this.model.cmd));
    return full;
  }

  /** The test: the start fails without an exit (a bad command, a timeout). */
  failStart(error: QmError): void {
    this.gone();
    this.settleStart(error);
  }

  logs(): string[] {
    return [...this.stderr];
  }

  stderrTail(lines = 10): string[] {
    return this.stderr.slice(-lines);
  }

  private gone(): void {
    this.asleep = false;
    this.state = "stopped";
    this.pid = null;
  }

  private settleStart(error: QmError | null): void {
    const s = this.starting;
    this.starting = null;
    if (!s) return;
    if (error) s.reject(error);
    else s.resolve();
  }
}

/** A factory that keeps every fake it made, by model id. */
export function fakeServers(): { make: ProcessFactory; of(id: string): FakeServer } {
  const made = new Map<string, FakeServer>();
  return {
    make: (model, onExit) => {
      const f = new FakeServer(model, onExit);
      made.set(model.id, f);
      return f;
    },
    of: (id) => {
      const f = made.get(id);
      if (!f) throw new Error(`no fake for ${id}`);
      return f;
    },
  };
}

/** Lets every promise chain already under way run to its next real wait (no time passes). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
