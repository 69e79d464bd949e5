/**
 * The two libc calls Bun has no API for, through `bun:ffi` (works inside the compiled
 * binary too):
 * - prctl(PR_SET_CHILD_SUBREAPER): a descendant whose parent dies (a model's worker after
 *   its shell wrapper exited, a `setsid` daemon) is reparented to qm instead of init, so it
 *   stays visible under qm and qm can kill it;
 * - waitpid(pid, WNOHANG): such a descendant becomes qm's zombie when it dies, and only qm
 *   can reap it. Never call it on a pid Bun spawned: Bun reaps its own children and dies
 *   with ECHILD when someone else did first.
 * Where libc cannot be loaded (no glibc/musl by these names) both do nothing.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import type { SubreaperResult } from "../types.ts";

const PR_SET_CHILD_SUBREAPER = 36;
const WNOHANG = 1;

interface Libc {
  prctl(option: number, arg: number): number;
  waitpid(pid: number): number;
}

let libc: Libc | null | undefined;
let whyNot = "";

function load(): Libc | null {
  if (libc !== undefined) return libc;
  libc = null;
  try {
    const u64 = FFIType.u64;
    const symbols = {
      prctl: { args: [FFIType.i32, u64, u64, u64, u64], returns: FFIType.i32 },
      waitpid: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    } as const;
    let lib: ReturnType<typeof dlopen<typeof symbols>> | null = null;
    const errors: string[] = [];
    for (const name of ["libc.so.6", "libc.so", "libc.musl-x86_64.so.1"]) {
      try {
        lib = dlopen(name, symbols);
        break;
      } catch (err) {
        errors.push(err instanceof Error ? err.message : String(err));
      }
    }
    if (lib === null) {
      whyNot = `cannot load libc (${errors.join("; ")})`;
      return null;
    }
    const status = new Int32Array(1);
    const s = lib.symbols;
    libc = {
      prctl: (option, arg) => s.prctl(option, arg, 0, 0, 0),
      waitpid: (pid) => s.waitpid(pid, ptr(status), WNOHANG),
    };
  } catch (err) {
    whyNot = `bun:ffi is unavailable (${err instanceof Error ? err.message : String(err)})`;
  }
  return libc;
}

let subreaper: SubreaperResult | undefined;

/** Makes qm its descendants' reaper of last resort (once; later calls repeat the answer). */
export function becomeSubreaper(): SubreaperResult {
  if (subreaper !== undefined) return subreaper;
  const c = load();
  subreaper =
    c !== null && c.prctl(PR_SET_CHILD_SUBREAPER, 1) === 0
      ? { ok: true }
      : { ok: false, why: whyNot || "prctl failed", byDesign: false };
  return subreaper;
}

/**
 * Whether this process is a child subreaper, or (before `becomeSubreaper`) could become one:
 * libc loads. For the report, which must not change the process that asks.
 */
export function canBeSubreaper(): boolean {
  return subreaper === undefined ? load() !== null : subreaper.ok;
}

/** Reaps `pid` if it is a zombie child of ours; true when it was reaped. */
export function reapChild(pid: number): boolean {
  const c = load();
  return c !== null && c.waitpid(pid) === pid;
}
