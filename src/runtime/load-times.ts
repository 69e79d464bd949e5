/**
 * How long each model's loads take: the last few durations per model (persisted, so a restart
 * of qm still knows), and the load in progress. While a model loads, `progress` gives the time
 * it has taken and the time it is expected to take (the median of its last loads), which
 * status, events and the wait-status comments show.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { LoadProgress } from "../proxy/wait-status.ts";

export type { LoadProgress };

/** Durations kept per model. */
const KEPT = 5;

export class LoadTimes {
  private readonly history = new Map<string, number[]>();
  private readonly started = new Map<string, number>();

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
      this.started.set(id, this.now());
      return;
    }
    const at = this.started.get(id);
    this.started.delete(id);
    if (state !== "ready" || at === undefined) return;
    const took = Math.max(0, Math.round(this.now() - at));
    const list = [...(this.history.get(id) ?? []), took].slice(-KEPT);
    this.history.set(id, list);
    this.write();
  }

  /** The load of `id` in progress, or null when it is not loading. */
  progress(id: string): LoadProgress | null {
    const at = this.started.get(id);
    if (at === undefined) return null;
    return { elapsedMs: Math.max(0, this.now() - at), expectedMs: this.expected(id) };
  }

  /** The median of the last loads of `id`; null when it never loaded. */
  expected(id: string): number | null {
    const list = this.history.get(id);
    if (!list || list.length === 0) return null;
    const sorted = [...list].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid]! : Math.round((sorted[mid - 1]! + sorted[mid]!) / 2);
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

  private write(): void {
    if (!this.file) return;
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      const tmp = `${this.file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(Object.fromEntries(this.history)));
      renameSync(tmp, this.file);
    } catch (err) {
      this.onWriteError(err);
    }
  }
}
