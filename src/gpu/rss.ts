/**
 * Resident memory of processes, as the platform reads it (src/platform: `residentBytes`; Linux
 * `VmRSS` of /proc/PID/status): on a unified-memory box a model's weights and buffers live in
 * system memory, so its tree's RSS is its share. A process gone (or not readable) counts as 0.
 */
import { type Platform, platform } from "../platform/index.ts";

/** pid → resident bytes. Injectable so tests need no real processes. */
export type RssReader = (pids: readonly number[]) => Promise<ReadonlyMap<number, number>>;

export function platformRss(on: Platform = platform): RssReader {
  return async (pids) => new Map(pids.map((pid) => [pid, on.residentBytes(pid) ?? 0]));
}
