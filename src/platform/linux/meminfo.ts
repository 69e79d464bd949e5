/**
 * /proc/meminfo (proc(5)): "Name:   value kB" lines, a few without a unit (HugePages_*
 * counts). Read for the box's memory totals, and by the GPU probe on boxes whose GPU shares
 * the system's memory.
 */

/** Every field, in bytes where the line has `kB` (the kernel's kB is KiB), else as written. */
export function parseMeminfo(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^([^:\s]+):\s+(\d+)(?:\s+(kB))?\s*$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]) * (m[3] ? 1024 : 1));
  }
  return out;
}
