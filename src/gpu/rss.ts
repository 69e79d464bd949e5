/**
 * Resident memory of processes, from `/proc/<pid>/status` (`VmRSS`, in kB): on a unified-memory
 * box a model's weights and buffers live in system memory, so its tree's RSS is its share. A
 * process gone (or not readable) counts as 0.
 */
import { readFile } from "node:fs/promises";

/** pid → resident bytes. Injectable so tests need no real processes. */
export type RssReader = (pids: readonly number[]) => Promise<ReadonlyMap<number, number>>;

/** `VmRSS` of a status file, in bytes; null when absent (a kernel thread, a zombie). */
export function parseVmRss(text: string): number | null {
  const m = /^VmRSS:\s+(\d+)\s*kB\s*$/m.exec(text);
  return m ? Number(m[1]) * 1024 : null;
}

export function procRss(procDir = "/proc"): RssReader {
  return async (pids) => {
    const out = new Map<number, number>();
    await Promise.all(
      pids.map(async (pid) => {
        const text = await readFile(`${procDir}/${pid}/status`, "utf8").catch(() => "");
        out.set(pid, parseVmRss(text) ?? 0);
      }),
    );
    return out;
  };
}
