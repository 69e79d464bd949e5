/**
 * Prefetch: the files of the models that come next, read into the OS page cache while they wait,
 * so that their load reads from memory rather than disk. One pump reads the planned files in
 * plan order, one chunk at a time, within the memory the box has available. Invariants:
 * ./design.md "Prefetch".
 */
import type { MemoryTotals } from "../platform/index.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";

/** Each read: small enough that the part of it that runs on the event loop stays under 1 ms. */
export const CHUNK_BYTES = 1 << 20;
/** How often (in bytes read) the box's memory is read again. */
export const MEMORY_EVERY_BYTES = 64 << 20;
/** The least memory left to everything else; 5 % of the box's memory where that is more. */
export const MIN_RESERVE_BYTES = 2 * 2 ** 30;

/** One file open for prefetching. */
export interface PrefetchHandle {
  /** Reads up to `bytes` at `position` into the page cache; resolves with how many (0: the end). */
  read(position: number, bytes: number): Promise<number>;
  close(): Promise<void>;
}

/** Where prefetched files come from (the file system; a fake in tests). */
export interface PrefetchSource {
  /** The file's size in bytes, or null when it cannot be read. Cheap (a stat). */
  size(path: string): number | null;
  open(path: string): Promise<PrefetchHandle>;
}

/** A model the plan says comes next, with its files (already checked against running models). */
export interface PlannedModel {
  model: string;
  files: readonly string[];
}

export interface PrefetchDeps {
  source: PrefetchSource;
  /** The box's memory now; null, or no `availableBytes`, where the platform cannot say. */
  memory(): MemoryTotals | null;
  clock: Clock;
  log: Logger;
}

interface FileState {
  readonly path: string;
  size: number;
  read: number;
  failed: boolean;
  /** Clock time its first chunk was read (for the log line once it is all read). */
  startedAt: number | null;
}

export class Prefetcher {
  private planned: PlannedModel[] = [];
  /** The files of the planned models, by path, in plan order. */
  private files = new Map<string, FileState>();
  private running = false;
  private stopped = false;
  /** The memory bound stopped the reads; lifted by the next plan. */
  private bounded = false;
  /** The bytes read when the bound was last logged. */
  private boundLoggedAt = -1;

  constructor(private readonly deps: PrefetchDeps) {}

  /**
   * The models that come next, first first. Files no longer named stop being read at the next
   * chunk; new ones are sized and queued; one named again keeps what was read of it.
   */
  plan(models: readonly PlannedModel[]): void {
    if (this.stopped) return;
    const files = new Map<string, FileState>();
    const planned: PlannedModel[] = [];
    for (const m of models) {
      const mine: string[] = [];
      for (const path of m.files) {
        let f = files.get(path) ?? this.files.get(path);
        if (!f) {
          const size = this.deps.source.size(path);
          f = { path, size: size ?? 0, read: 0, failed: size === null, startedAt: null };
        }
        files.set(path, f);
        mine.push(path);
      }
      if (mine.length > 0) planned.push({ model: m.model, files: mine });
    }
    this.planned = planned;
    this.files = files;
    this.bounded = false;
    if (!this.running) void this.pump();
  }

  /** The fraction of `model`'s files read (0 to 1), or null when it is not planned. */
  progress(model: string): number | null {
    const m = this.planned.find((p) => p.model === model);
    if (!m) return null;
    let read = 0;
    let size = 0;
    for (const path of m.files) {
      const f = this.files.get(path)!;
      if (f.failed) continue;
      read += f.read;
      size += f.size;
    }
    return size === 0 ? null : read / size;
  }

  /** Shutdown: nothing more is read; a read in flight ends and its file is closed. */
  stop(): void {
    this.stopped = true;
    this.planned = [];
    this.files = new Map();
  }

  /** The first planned file not yet all read. */
  private next(): FileState | undefined {
    if (this.bounded) return undefined;
    for (const f of this.files.values()) if (!f.failed && f.read < f.size) return f;
    return undefined;
  }

  /** Bytes the memory bound lets it read now (≤ 0: none). */
  private allowance(): number {
    const mem = this.deps.memory();
    if (mem === null || mem.availableBytes === null) return 0;
    const reserve = Math.max(MIN_RESERVE_BYTES, Math.floor(mem.totalBytes * 0.05));
    return mem.availableBytes - reserve - this.readBytes();
  }

  private async pump(): Promise<void> {
    this.running = true;
    // Read before the first chunk, then every MEMORY_EVERY_BYTES.
    const budget = { left: 0, sinceCheck: Number.POSITIVE_INFINITY };
    try {
      for (let f = this.next(); f !== undefined; f = this.next()) {
        if (!(await this.readFile(f, budget))) break;
      }
    } finally {
      this.running = false;
    }
    // A plan that came while the last file closed: no await from `running = false` to here.
    if (!this.stopped && this.next() !== undefined) void this.pump();
  }

  /**
   * Reads `f` for as long as it is the first planned file not all read; false once the memory
   * bound stops the reads.
   */
  private async readFile(
    f: FileState,
    budget: { left: number; sinceCheck: number },
  ): Promise<boolean> {
    const { source, log, clock } = this.deps;
    let handle: PrefetchHandle;
    try {
      handle = await source.open(f.path);
    } catch (err) {
      this.fail(f, err);
      return true;
    }
    try {
      while (this.next() === f) {
        if (budget.sinceCheck >= MEMORY_EVERY_BYTES) {
          budget.left = this.allowance();
          budget.sinceCheck = 0;
        }
        if (budget.left <= 0) {
          this.bounded = true;
          // Said once for each amount read, not at every new plan.
          const read = this.readBytes();
          if (read !== this.boundLoggedAt) {
            this.boundLoggedAt = read;
            log.info(`prefetch: stopped after ${gb(read)}: the memory available to it is used`);
          }
          return false;
        }
        f.startedAt ??= clock.now();
        const n = await handle.read(f.read, Math.min(CHUNK_BYTES, f.size - f.read, budget.left));
        // The file is shorter than it was: what is there is all read.
        if (n === 0) f.size = f.read;
        f.read += n;
        budget.left -= n;
        budget.sinceCheck += n;
        if (f.read >= f.size) {
          const s = (clock.now() - f.startedAt) / 1000;
          log.info(`prefetch: read ${f.path} (${gb(f.size)} in ${s.toFixed(1)} s)`);
        }
      }
      return true;
    } catch (err) {
      this.fail(f, err);
      return true;
    } finally {
      await handle.close().catch(() => {});
    }
  }

  private fail(f: FileState, err: unknown): void {
    f.failed = true;
    const why = err instanceof Error ? err.message : String(err);
    this.deps.log.warn(`prefetch: cannot read ${f.path}: ${why}`);
  }

  private readBytes(): number {
    let n = 0;
    for (const f of this.files.values()) n += f.read;
    return n;
  }
}

function gb(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(2)} GB`;
}
