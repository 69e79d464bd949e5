/**
 * The libc calls Bun has no API for, through `bun:ffi` (works inside the compiled binary too):
 * - prctl(PR_SET_CHILD_SUBREAPER): a descendant whose parent dies (a model's worker after
 *   its shell wrapper exited, a `setsid` daemon) is reparented to qm instead of init, so it
 *   stays visible under qm and qm can kill it;
 * - waitpid(pid, WNOHANG): such a descendant becomes qm's zombie when it dies, and only qm
 *   can reap it. Never call it on a pid Bun spawned: Bun reaps its own children and dies
 *   with ECHILD when someone else did first;
 * - execve: this process replaced by a program (itself, with settings Bun reads only as it
 *   starts: src/cli/fetch-limit.ts).
 * Where libc cannot be loaded (no glibc/musl by these names) none does anything.
 */
import { dlopen, FFIType, ptr, read } from "bun:ffi";
import { constants } from "node:os";
import type { SubreaperResult } from "../types.ts";

/** The C library by the names glibc and musl give it, on each architecture qm ships for. */
export const LIBC_NAMES = [
  "libc.so.6",
  "libc.so",
  "libc.musl-x86_64.so.1",
  "libc.musl-aarch64.so.1",
] as const;

const PR_SET_CHILD_SUBREAPER = 36;
const WNOHANG = 1;

interface Libc {
  prctl(option: number, arg: number): number;
  waitpid(pid: number): number;
  /** Returns only on failure (-1). */
  execve(path: string, argv: readonly string[], env: readonly string[]): number;
  /** This thread's errno. */
  errno(): number;
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
      execve: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
      __errno_location: { args: [], returns: FFIType.ptr },
    } as const;
    let lib: ReturnType<typeof dlopen<typeof symbols>> | null = null;
    const errors: string[] = [];
    for (const name of LIBC_NAMES) {
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
      execve(path, argv, env) {
        // The strings and the two NULL-ended pointer arrays stay referenced here until
        // execve returns, which it does only on failure.
        const file = cString(path);
        const args = pointerArray(argv.map(cString));
        const vars = pointerArray(env.map(cString));
        return s.execve(ptr(file), ptr(args.array), ptr(vars.array));
      },
      errno() {
        const at = s.__errno_location();
        return at === null ? 0 : read.i32(at, 0);
      },
    };
  } catch (err) {
    whyNot = `bun:ffi is unavailable (${err instanceof Error ? err.message : String(err)})`;
  }
  return libc;
}

function cString(text: string): Buffer {
  return Buffer.from(`${text}\0`);
}

/** `char *const[]`: each string's address, then NULL. */
function pointerArray(strings: Buffer[]): { array: BigUint64Array; strings: Buffer[] } {
  const array = new BigUint64Array(strings.length + 1);
  strings.forEach((b, i) => {
    array[i] = BigInt(ptr(b));
  });
  return { array, strings };
}

/**
 * Runs `path` in place of this process (execve(2)): returns only when it could not, saying
 * why. `argv` and `env` as the new program will see them (`NAME=value` strings).
 */
export function execProgram(path: string, argv: readonly string[], env: readonly string[]): string {
  const c = load();
  if (c === null) return whyNot;
  c.execve(path, argv, env);
  const errno = c.errno();
  // The runtime's own table of this system's errno names (ENOENT, ENOEXEC, …).
  const name = Object.entries(constants.errno).find(([, n]) => n === errno)?.[0];
  return `execve failed (${name ?? `errno ${errno}`})`;
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
