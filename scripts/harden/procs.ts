/**
 * Finding the processes qm started, from /proc, and proving they are gone.
 *
 * Two independent ways, united: every qm instance runs with `QM_HARDEN_RUN=<run>` and
 * `QM_HARDEN_QM=<instance>` in its environment, which every model process and everything they
 * spawn inherit (visible in /proc/PID/environ, even for `setsid` grandchildren that left the
 * process group); and just before a qm instance is stopped or killed, its descendants are
 * snapshotted by walking /proc parent links. A process is identified by pid *and* start time,
 * so a recycled pid is never mistaken for a survivor.
 */
import { readdirSync, readFileSync } from "node:fs";
import { log } from "../bench/util.ts";

/** This run's marker: in every qm's environment and in every demo model's `--name`. */
export const RUN = `harden-${Math.random().toString(16).slice(2, 10)}`;
export const RUN_ENV = "QM_HARDEN_RUN";
export const INSTANCE_ENV = "QM_HARDEN_QM";

export interface Proc {
  pid: number;
  ppid: number;
  /** Start time in clock ticks since boot (proc(5) field 22): pid + start is unique. */
  start: string;
  state: string;
}

function stat(pid: number): Proc | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ppid …": comm may hold spaces and parentheses.
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { pid, ppid: Number(f[1]), start: f[19] ?? "", state: f[0] ?? "" };
  } catch {
    return null;
  }
}

function pids(): number[] {
  return readdirSync("/proc")
    .filter((n) => n.charCodeAt(0) >= 48 && n.charCodeAt(0) <= 57)
    .map(Number);
}

function all(): Proc[] {
  const out: Proc[] = [];
  for (const pid of pids()) {
    const p = stat(pid);
    if (p) out.push(p);
  }
  return out;
}

/** Still running: same pid and start time, and not a zombie waiting to be reaped. */
export function running(p: Proc): boolean {
  const now = stat(p.pid);
  return now !== null && now.start === p.start && now.state !== "Z" && now.state !== "X";
}

/** Every process below `root` (not `root` itself), by parent links. */
export function descendants(root: number): Proc[] {
  const byParent = new Map<number, Proc[]>();
  for (const p of all()) {
    const list = byParent.get(p.ppid) ?? [];
    list.push(p);
    byParent.set(p.ppid, list);
  }
  const out: Proc[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const next = queue.shift() as number;
    for (const child of byParent.get(next) ?? []) {
      out.push(child);
      queue.push(child.pid);
    }
  }
  return out;
}

function read(path: string): string {
  try {
    return readFileSync(path, "latin1");
  } catch {
    return "";
  }
}

export function cmdline(pid: number): string {
  return read(`/proc/${pid}/cmdline`).replaceAll("\0", " ").trim();
}

/** Running processes whose environment says they belong to this run (and `instance`). */
export function marked(instance?: string): Proc[] {
  const want = instance === undefined ? `\0${RUN_ENV}=${RUN}\0` : `\0${INSTANCE_ENV}=${instance}\0`;
  return all().filter((p) => {
    if (p.pid === process.pid || p.state === "Z") return false;
    const env = `\0${read(`/proc/${p.pid}/environ`)}`;
    return env.includes(want) || (instance === undefined && cmdline(p.pid).includes(RUN));
  });
}

/**
 * Waits up to `graceMs` for the processes of a stopped qm instance to go: those in `snapshot`
 * (its descendants just before it was stopped) and any still carrying its marker. Returns the
 * ones left running, never counting `exclude` (qm's own pid).
 */
export async function survivors(
  instance: string,
  snapshot: Proc[],
  exclude: number,
  graceMs: number,
): Promise<Proc[]> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    const left = new Map<string, Proc>();
    for (const p of [...snapshot.filter(running), ...marked(instance)]) {
      if (p.pid !== exclude) left.set(`${p.pid}/${p.start}`, p);
    }
    if (left.size === 0 || Date.now() >= deadline) return [...left.values()];
    await Bun.sleep(50);
  }
}

/** SIGKILLs each process that is still the one recorded. */
export function killAll(procs: Proc[]): void {
  for (const p of procs) {
    if (!running(p)) continue;
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
}

/** Last resort at exit: kills whatever still carries this run's marker; returns how many. */
export function sweep(): number {
  const left = marked();
  for (const p of left) log(`left behind: pid ${p.pid} ${cmdline(p.pid).slice(0, 160)}; killing`);
  killAll(left);
  return left.length;
}
