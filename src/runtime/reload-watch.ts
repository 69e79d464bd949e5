/**
 * The config file watch (`server.watch_config`). Editors save by writing a new file and
 * renaming it over the old one, which ends a watch on the file itself, so the directory is
 * watched and events are filtered by name. A burst of events (write, rename, chmod) becomes one
 * reload after `debounceMs` of quiet; a write that leaves the content as it was (a `touch`, a
 * save without edits) reloads nothing: the content's hash is compared with the last one seen.
 */
import { readFileSync, watch } from "node:fs";
import { basename, dirname } from "node:path";
import type { Logger } from "../shared/log.ts";
import type { Timers } from "../shared/timer.ts";

export const DEBOUNCE_MS = 300;

export interface ConfigWatchDeps {
  file: string;
  timers: Timers;
  log: Logger;
  /** Reload now (the content changed). */
  reload(): void;
  debounceMs?: number;
  /** The file's content, or null when it cannot be read (mid-rename); default `readFileSync`. */
  read?(path: string): string | null;
  /** Calls `onEvent(name)` for each change in `dir`; returns the stop. Default `fs.watch`. */
  watchDir?(dir: string, onEvent: (name: string | null) => void): () => void;
}

export class ConfigWatch {
  private last: number | bigint | null;
  private timer: unknown = null;
  private stopWatch: (() => void) | null = null;
  private readonly name: string;

  constructor(private readonly deps: ConfigWatchDeps) {
    this.name = basename(deps.file);
    this.last = this.hash();
  }

  start(): void {
    const watchDir = this.deps.watchDir ?? watchWithFs;
    try {
      this.stopWatch = watchDir(dirname(this.deps.file), (name) => {
        // Some platforms give no name; then any change in the directory counts.
        if (name === null || name === this.name) this.changed();
      });
    } catch (err) {
      this.deps.log.warn(
        `cannot watch ${this.deps.file} (${err instanceof Error ? err.message : err}); ` +
          "reload with SIGHUP or POST /api/config/reload",
      );
    }
  }

  stop(): void {
    this.stopWatch?.();
    this.stopWatch = null;
    if (this.timer !== null) this.deps.timers.clear(this.timer);
    this.timer = null;
  }

  /** A reload happened by other means (SIGHUP, the API): the content it read is the one seen. */
  sync(): void {
    this.last = this.hash();
  }

  /** The file (or its directory entry) changed: reload once things are quiet. */
  changed(): void {
    const { timers } = this.deps;
    if (this.timer !== null) timers.clear(this.timer);
    this.timer = timers.set(() => {
      this.timer = null;
      this.settle();
    }, this.deps.debounceMs ?? DEBOUNCE_MS);
  }

  private settle(): void {
    const h = this.hash();
    // Missing for now (renamed away, not yet back): the rename's own event comes next.
    if (h === null || h === this.last) return;
    this.last = h;
    this.deps.reload();
  }

  private hash(): number | bigint | null {
    const text = (this.deps.read ?? readOrNull)(this.deps.file);
    return text === null ? null : Bun.hash(text);
  }
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** The default `watchDir`: the OS's own file watch on `dir`. */
export function watchWithFs(dir: string, onEvent: (name: string | null) => void): () => void {
  const w = watch(dir, { persistent: false }, (_event, name) => onEvent(name ?? null));
  return () => w.close();
}
