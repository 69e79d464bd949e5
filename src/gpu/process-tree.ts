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

/**
 * The pids of qm's trees, each with the root (the model process qm started) it belongs to, so
 * memory can be told per model as well as in all. A pid reached from two roots is the first's.
 */
export class PidTree extends Set<number> {
  readonly #roots = new Map<number, number>();

  /** Adds `pid` as a member of `root`'s tree (a pid already in keeps its first root). */
  join(pid: number, root: number): this {
    if (!this.#roots.has(pid)) this.#roots.set(pid, root);
    return this.add(pid);
  }

  /** The root whose tree `pid` is in, or undefined when it is none of qm's. */
  rootOf(pid: number): number | undefined {
    return this.#roots.get(pid);
  }
}

/** Roots → the roots plus all their descendants. Injectable so tests need no real tree. */
export type ProcessTree = (roots: readonly number[]) => Promise<ReadonlySet<number>>;

/** The root of `pid` in `tree`, when the tree knows roots (a `PidTree`). */
export function rootIn(tree: ReadonlySet<number>, pid: number): number | undefined {
  return tree instanceof PidTree ? tree.rootOf(pid) : undefined;
}

/** A tree from a `children(pid)` function, for tests and non-Linux callers. */
export function treeFromChildren(children: (pid: number) => readonly number[]): ProcessTree {
  return async (roots) =>
    walk(
      roots.map((r) => [r, r] as const),
      children,
    );
}

/** Every `[pid, root]` start and what descends from it by `children`. */
function walk(
  starts: readonly (readonly [number, number])[],
  children: (pid: number) => readonly number[],
): PidTree {
  const seen = new PidTree();
  for (const [start, root] of starts) {
    const todo = [start];
    while (todo.length > 0) {
      const pid = todo.pop()!;
      if (seen.has(pid)) continue;
      seen.join(pid, root);
      todo.push(...children(pid));
    }
  }
  return seen;
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
    const ours = new PidTree();
    for (const r of roots) ours.join(r, r);
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
      if (rootSet.has(st.pgrp)) ours.join(pid, st.pgrp);
      else if (rootSet.has(st.session)) ours.join(pid, st.session);
      const list = children.get(st.ppid);
      if (list) list.push(pid);
      else children.set(st.ppid, [pid]);
    }
    // Roots first, so each walks its own tree before a group member's descendants are reached.
    const starts = [...ours].map((pid) => [pid, ours.rootOf(pid)!] as const);
    return walk(starts, (pid) => children.get(pid) ?? []);
  };
}
