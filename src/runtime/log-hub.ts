/**
 * Live followers of models' output lines (`GET /api/models/{id}/logs?follow=1`, `qm logs -f`).
 * A line reaches every follower of its model as it is read; a follower that throws is dropped,
 * and none is ever awaited, so a slow reader cannot hold a model's output back.
 */
export class LogHub {
  private readonly followers = new Map<string, Set<(line: string) => void>>();

  /** Calls `fn` with each new line of model `id` until the returned function is called. */
  follow(id: string, fn: (line: string) => void): () => void {
    let set = this.followers.get(id);
    if (!set) {
      set = new Set();
      this.followers.set(id, set);
    }
    set.add(fn);
    return () => {
      const s = this.followers.get(id);
      if (!s) return;
      s.delete(fn);
      if (s.size === 0) this.followers.delete(id);
    };
  }

  publish(id: string, line: string): void {
    const set = this.followers.get(id);
    if (!set) return;
    for (const fn of set) {
      try {
        fn(line);
      } catch {
        set.delete(fn);
      }
    }
  }
}
