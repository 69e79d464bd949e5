/**
 * Models die with qm, however qm dies. Every exit that runs JavaScript stops them
 * (`killAllSync`, supervision.ts); a SIGKILL or the OOM killer runs nothing, so a watcher
 * process does it instead: a POSIX shell, in a session of its own (a terminal's Ctrl-C does
 * not reach it; it ignores INT, TERM, HUP and QUIT too), that reads on its standard input the
 * process groups qm's models run in — `+PGID` when one starts, `-PGID` when it is gone — from
 * a socket only qm holds open (Bun's pipes are close-on-exec: no model inherits it). When qm
 * is gone, however it went, the kernel closes qm's end; the watcher reads the end of its
 * input, SIGKILLs every group still listed, and exits.
 *
 * It is started at the first group and stays; if it dies while qm runs, another is started
 * at once and given all of them (unless it died within a second of its start: then at the
 * next change of the groups, so a shell that cannot run is not restarted in a loop). One watcher per qm process, whatever
 * the number of models: each model's start pays nothing more than a line written.
 *
 * Before it, each model was started through `setpriv --pdeathsig KILL`: an exec more per
 * start (1 – 1.3 ms here, on the way from a request to its model's spawn), and the kernel's
 * signal reached each model's leader only, so a model wrapped in a shell left its server
 * running. The watcher ends whole groups; what left its group (`setsid`) is ended by the next
 * `qm serve` from the run file (run-record.ts), as before.
 */
import type { Logger } from "../shared/log.ts";

/** The watcher: groups as `+N` / `-N` lines; at the end of its input it kills those listed. */
export const WATCHER_SCRIPT = `trap '' INT TERM HUP QUIT
g=' '
while IFS= read -r l; do
  p=\${l#?}
  case $p in ''|*[!0-9]*|0|1) continue ;; esac
  case $l in
    +*) g="$g$p " ;;
    -*) case $g in *" $p "*) g="\${g%% $p *} \${g#* $p }" ;; esac ;;
  esac
done
for p in $g; do kill -s KILL -- "-$p" 2>/dev/null; done
`;

export interface WatcherProcess {
  readonly pid: number;
  readonly exited: Promise<unknown>;
  write(text: string): void;
  /** Closes qm's end: the watcher kills what it still lists (what qm's death does). */
  end(): void;
}

/** The real watcher: `/bin/sh`, detached, not keeping qm alive. */
export function spawnWatcher(shell = "/bin/sh"): WatcherProcess {
  const proc = Bun.spawn([shell, "-c", WATCHER_SCRIPT], {
    argv0: "qm-death-watch", // what `ps` shows of it
    stdin: "pipe",
    stdout: "ignore",
    stderr: "ignore",
    detached: true,
  });
  proc.unref();
  proc.stdin.unref();
  return {
    pid: proc.pid,
    exited: proc.exited,
    write(text) {
      proc.stdin.write(text);
      proc.stdin.flush();
    },
    end() {
      proc.stdin.end();
    },
  };
}

/** A watcher that lived less than this is not replaced at once (a shell that cannot run). */
export const MIN_LIFE_MS = 1000;

export class DeathWatch {
  private readonly groups = new Set<number>();
  private watcher: WatcherProcess | null = null;
  private warned = false;

  constructor(
    private readonly spawn: (() => WatcherProcess) | null,
    private log: Pick<Logger, "warn"> | null = null,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Where a watcher that cannot start or that died is said. */
  setLogger(log: Pick<Logger, "warn">): void {
    this.log = log;
  }

  get enabled(): boolean {
    return this.spawn !== null;
  }

  /** The watcher's pid, or null while none runs. */
  get pid(): number | null {
    return this.watcher?.pid ?? null;
  }

  add(pgid: number): void {
    if (this.spawn === null || this.groups.has(pgid)) return;
    this.groups.add(pgid);
    this.send(`+${pgid}\n`);
  }

  remove(pgid: number): void {
    if (!this.groups.delete(pgid)) return;
    this.send(`-${pgid}\n`);
  }

  /** Closes qm's end now (a test standing in for qm's death); the next `add` starts another. */
  end(): void {
    const w = this.watcher;
    this.watcher = null;
    w?.end();
  }

  private send(line: string): void {
    if (this.watcher === null) {
      this.start();
      return;
    }
    try {
      this.watcher.write(line);
    } catch {
      // It went between its exit and our hearing of it: another, told every group.
      this.watcher = null;
      this.start();
    }
  }

  /** A new watcher, told every group listed now. */
  private start(): void {
    let w: WatcherProcess;
    try {
      w = this.spawn!();
      const all = [...this.groups].map((g) => `+${g}\n`).join("");
      if (all !== "") w.write(all);
    } catch (err) {
      if (this.warned) return;
      this.warned = true;
      const why = err instanceof Error ? err.message : String(err);
      this.log?.warn(
        `cannot watch for qm's own death (${why}): if qm is killed outright, its models stay ` +
          "running until the next qm serve ends them",
      );
      return;
    }
    this.watcher = w;
    const born = this.now();
    void w.exited.then(() => {
      if (this.watcher !== w) return; // ended by us, or replaced already
      this.watcher = null;
      if (this.groups.size === 0) return; // the next group starts another
      // Killed while qm runs: another at once, unless this one could not even run a second.
      if (this.now() - born < MIN_LIFE_MS) return;
      this.log?.warn(`the death watch (pid ${w.pid}) exited; starting another`);
      this.start();
    });
  }
}
