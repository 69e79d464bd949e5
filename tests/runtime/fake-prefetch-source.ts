/**
 * A prefetch source for tests (src/runtime/prefetch.ts `PrefetchSource`): files by size, and
 * every read waits until the test completes it. It records what was opened, read and closed,
 * and the most reads (and opens of one path) at once.
 */
import type { PrefetchHandle, PrefetchSource } from "../../src/runtime/prefetch.ts";
import { settle } from "./fake-server.ts";

export const MiB = 1 << 20;

interface PendingRead {
  path: string;
  position: number;
  bytes: number;
  resolve(n: number): void;
  reject(err: Error): void;
}

/** Files by size; every read waits for `finish()` (or a test rejects it). */
export class FakeSource implements PrefetchSource {
  readonly pending: PendingRead[] = [];
  /** What happened, in order: `open P`, `read P@offset+bytes`, `close P`. */
  readonly log: string[] = [];
  inFlight = 0;
  maxInFlight = 0;
  /** Paths open now (a path twice would be one file read twice at once). */
  readonly open_: string[] = [];
  maxSamePathOpen = 0;

  constructor(private readonly sizes: Record<string, number>) {}

  size(path: string): number | null {
    return this.sizes[path] ?? null;
  }

  async open(path: string): Promise<PrefetchHandle> {
    this.log.push(`open ${path}`);
    this.open_.push(path);
    this.maxSamePathOpen = Math.max(
      this.maxSamePathOpen,
      this.open_.filter((p) => p === path).length,
    );
    return {
      read: (position, bytes) => {
        this.log.push(`read ${path}@${position / MiB}+${bytes / MiB}`);
        this.inFlight++;
        this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
        return new Promise<number>((resolve, reject) => {
          this.pending.push({
            path,
            position,
            bytes,
            resolve: (n) => {
              this.inFlight--;
              resolve(n);
            },
            reject: (err) => {
              this.inFlight--;
              reject(err);
            },
          });
        });
      },
      close: async () => {
        this.log.push(`close ${path}`);
        this.open_.splice(this.open_.indexOf(path), 1);
      },
    };
  }

  /** Completes the read in flight in full; returns its path. */
  async finish(): Promise<string> {
    await settle();
    const r = this.pending.shift();
    if (!r) throw new Error("no read in flight");
    r.resolve(r.bytes);
    await settle();
    return r.path;
  }

  /** Completes reads until none is asked for; how many. */
  async drain(limit = 10_000): Promise<number> {
    let n = 0;
    await settle();
    while (this.pending.length > 0 && n < limit) {
      await this.finish();
      n++;
    }
    return n;
  }
}
