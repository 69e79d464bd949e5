/**
 * Which pids belong to qm: the model processes it started and everything below them.
 * nvidia-smi lists the process that holds the CUDA context, which for wrappers
 * (`docker run …`, `uv run vllm …`, a shell script) is a descendant, not the pid qm
 * spawned.
 *
 * The Linux default reads `/proc/<pid>/stat` (proc(5)): field 4 is the parent pid, 5 the
 * process group, 6 the session. A pid is ours when it descends from a root by parent
 * links, or shares a root's process group or session: qm starts every model with
 * `detached: true` (setsid), so the session survives a double fork that re-parents a
 * daemonised grandchild to init. (`/proc/<pid>/task/*\/children` would be cheaper but
 * misses exactly those re-parented processes.)
 */
import { readdir, readFile } from "node:fs/promises";

/** Roots → the roots plus all their descendants. Injectable so tests need no real tree. */
export type ProcessTree = (roots: readonly number[]) => Promise<ReadonlySet<number>>;

/** A tree from a `children(pid)` function, for tests and non-Linux callers. */
export function treeFromChildren(children: (pid: number) => readonly number[]): ProcessTree {
  return async (roots) => {
    const seen = new Set<number>();
    const todo = [...roots];
    while (todo.length > 0) {
      const pid = todo.pop()!;
      if (seen.has(pid)) continue;
      seen.add(pid);
      todo.push(...children(pid));
    }
    return seen;
  };
}

export interface StatFields {
  ppid: number;
  pgrp: number;
  session: number;
}

/**
 * Parses the fields after `comm` in `/proc/<pid>/stat`. `comm` is in parentheses and may
 * itself contain spaces and parentheses, so split after the last ')'.
 */
export function parseStat(text: string): StatFields | null {
  const close = text.lastIndexOf(")");
  if (close < 0) return null;
  const rest = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  const [ppid, pgrp, session] = rest.slice(1, 4).map(Number);
  if (![ppid, pgrp, session].every((n) => Number.isInteger(n))) return null;
  return { ppid: ppid!, pgrp: pgrp!, session: session! };
}

/** The Linux process tree from `procDir` (default `/proc`; a temp dir in tests). */
export function procTree(procDir = "/proc"): ProcessTree {
  return async (roots) => {
    const ours = new Set<number>(roots);
    if (roots.length === 0) return ours;
    let names: string[];
    try {
      names = await readdir(procDir);
    } catch {
      return ours; // no /proc (macOS): only the roots themselves
    }
    const rootSet = new Set(roots);
    const children = new Map<number, number[]>();
    const stats = await Promise.all(
      names
        .filter((n) => /^\d+$/.test(n))
        .map(async (n) => {
          // A process may exit between readdir and readFile: skip it.
          const text = await readFile(`${procDir}/${n}/stat`, "utf8").catch(() => "");
          return [Number(n), parseStat(text)] as const;
        }),
    );
    for (const [pid, st] of stats) {
      if (!st) continue;
      if (rootSet.has(st.pgrp) || rootSet.has(st.session)) ours.add(pid);
      const list = children.get(st.ppid);
      if (list) list.push(pid);
      else children.set(st.ppid, [pid]);
    }
    return treeFromChildren((pid) => children.get(pid) ?? [])([...ours]);
  };
}
