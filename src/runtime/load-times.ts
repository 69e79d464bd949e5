/**
 * How long each model's loads take: the last few durations per model (persisted, so a restart
 * of qm still knows), and the load in progress. While a model loads, `progress` gives the time
 * it has taken and the time it is expected to take (the median of its last loads), which
 * status, events and the wait-status comments show.
 *
 * The fraction done is the larger of the time's (elapsed / expected) and the floor the model's
 * own log lines show (`load-stages.ts`, llama-server's stages); it never goes back during a
 * load, and stays under 99% until the model is ready.
 */
import { readFileSync } from "node:fs";
import { mkdir, rename } from "node:fs/promises";
import { dirname } from "node:path";
import type { LoadProgress } from "../proxy/wait-status.ts";
import { LoadStages } from "./load-stages.ts";

export type { LoadProgress };

/** Durations kept per model. */
const KEPT = 5;
/** Progress shown before the model is ready. */
const MAX_PROGRESS = 0.99;

/** One load in progress. */
interface Load {
  at: number;
  stages: LoadStages;
  /** The most progress reported so far: it never goes back. */
  shown: number;
}

export class LoadTimes {
  private readonly history = new Map<string, number[]>();
  private readonly started = new Map<string, Load>();
  /** Wakes from sleep (`evict = "sleep"`): kept apart from loads, in memory only. */
  private readonly wakes = new Map<string, number[]>();
  private readonly waking = new Map<string, number>();
  /** The history changed since the last write began; the write in flight, if any. */
  private dirty = false;
  private writing: Promise<void> | null = null;

  /** `file`: where the history is kept across restarts (none: memory only). */
  constructor(
    private readonly now: () => number,
    private readonly file: string | null = null,
    private readonly onWriteError: (err: unknown) => void = () => {},
  ) {
    if (file) this.read(file);
  }

  /** A model's state changed: a load starts at `starting` and ends, measured, at `ready`. */
  state(id: string, state: string): void {
    if (state === "starting") {
      this.started.set(id, { at: this.now(), stages: new LoadStages(), shown: 0 });
      return;
    }
    const load = this.started.get(id);
    this.started.delete(id);
    if (state !== "ready" || load === undefined) return;
    const took = Math.max(0, Math.round(this.now() - load.at));
    const list = [...(this.history.get(id) ?? []), took].slice(-KEPT);
    this.history.set(id, list);
    this.write();
  }

  /**
   * A sleeping model's wake: it starts at `starting` ("waking") and ends, measured, at
   * `ready`. A wake is not a load: its seconds are kept apart (`expectedWake`).
   */
  wakeState(id: string, state: string, waking: boolean): void {
    if (waking) {
      this.waking.set(id, this.now());
      return;
    }
    const at = this.waking.get(id);
    if (at === undefined) return;
    this.waking.delete(id);
    if (state !== "ready") return;
    const list = [...(this.wakes.get(id) ?? []), Math.max(0, Math.round(this.now() - at))];
    this.wakes.set(id, list.slice(-KEPT));
  }

  /** The median of the last wakes of `id`; null when it was never woken. */
  expectedWake(id: string): number | null {
    return median(this.wakes.get(id));
  }

  /** An output line of model `id`: while it loads, the stage it shows (llama-server's). */
  line(id: string, line: string): void {
    this.started.get(id)?.stages.line(line);
  }

  /** The load of `id` in progress, or null when it is not loading. */
  progress(id: string): LoadProgress | null {
    const load = this.started.get(id);
    if (load === undefined) return null;
    const elapsedMs = Math.max(0, this.now() - load.at);
    const expectedMs = this.expected(id);
    const { floor, stage } = load.stages;
    const timed = expectedMs !== null && expectedMs > 0 ? elapsedMs / expectedMs : 0;
    const known = stage !== null || (expectedMs !== null && expectedMs > 0);
    load.shown = Math.min(MAX_PROGRESS, Math.max(load.shown, floor, timed));
    return { elapsedMs, expectedMs, progress: known ? load.shown : null, stage };
  }

  /** The median of the last loads of `id`; null when it never loaded. */
  expected(id: string): number | null {
    return median(this.history.get(id));
  }

  /** The last load's duration of `id`, or null. */
  last(id: string): number | null {
    return this.history.get(id)?.at(-1) ?? null;
  }

  private read(file: string): void {
    let data: unknown;
    try {
      data = JSON.parse(readFileSync(file, "utf8"));
    } catch {
      return; // none yet, or unreadable: start afresh
    }
    if (typeof data !== "object" || data === null) return;
    for (const [id, list] of Object.entries(data)) {
      if (!Array.isArray(list)) continue;
      const ok = list.filter((n): n is number => typeof n === "number" && n >= 0 && n < 1e9);
      if (ok.length > 0) this.history.set(id, ok.slice(-KEPT));
    }
  }

  /**
   * Saves the history, off the path that just made a model ready: the file is written with
   * asynchronous I/O (a synchronous write took ~2 ms here, before the first waiter's grant),
   * one write at a time, the latest history last.
   */
  private write(): void {
    if (!this.file) return;
    this.dirty = true;
    this.writing ??= this.flush(this.file);
  }

  private async flush(file: string): Promise<void> {
    while (this.dirty) {
      this.dirty = false;
      const tmp = `${file}.${process.pid}.tmp`;
      try {
        await mkdir(dirname(file), { recursive: true });
        await Bun.write(tmp, JSON.stringify(Object.fromEntries(this.history)));
        await rename(tmp, file);
      } catch (err) {
        this.onWriteError(err);
      }
    }
    this.writing = null;
  }

  /** Resolves once every duration recorded so far is in the file. */
  flushed(): Promise<void> {
    return this.writing ?? Promise.resolve();
  }
}

function median(list: readonly number[] | undefined): number | null {
  if (!list || list.length === 0) return null;
  const sorted = [...list].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : Math.round((sorted[mid - 1]! + sorted[mid]!) / 2);
}
