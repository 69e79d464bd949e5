/**
 * The two libc calls Bun has no API for, through `bun:ffi` (works inside the compiled
 * binary too):
 * - prctl(PR_SET_CHILD_SUBREAPER): a descendant whose parent dies (a model's worker after
 *   its shell wrapper exited, a `setsid` daemon) is reparented to qm instead of init, so it
 *   stays visible under qm and qm can kill it;
 * - waitpid(pid, WNOHANG): such a descendant becomes qm's zombie when it dies, and only qm
 *   can reap it. Never call it on a pid Bun spawned: Bun reaps its own children and dies
 *   with ECHILD when someone else did first.
 * Where libc cannot be loaded (not Linux, no glibc/musl by these names) both do nothing.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import type { Logger } from "../shared/log.ts";

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
  if (process.platform !== "linux") {
    whyNot = `not available on ${process.platform}`;
    return null;
  }
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

let subreaper: boolean | undefined;

/** Makes qm its descendants' reaper of last resort; says once (a warning) when it cannot. */
export function becomeSubreaper(log: Logger): boolean {
  if (subreaper !== undefined) return subreaper;
  const c = load();
  subreaper = c !== null && c.prctl(PR_SET_CHILD_SUBREAPER, 1) === 0;
  if (!subreaper) {
    log.warn(
      `cannot make qm a child subreaper (${whyNot || "prctl failed"}): a model's descendants ` +
        "that leave its process group are found only while qm scans them",
    );
  }
  return subreaper;
}

/** Whether this process is a child subreaper (set by `becomeSubreaper`). */
export function isSubreaper(): boolean {
  return subreaper === true;
}

/** Reaps `pid` if it is a zombie child of ours; true when it was reaped. */
export function reapChild(pid: number): boolean {
  const c = load();
  return c !== null && c.waitpid(pid) === pid;
}
