/**
 * AMD cards from the amdgpu driver's sysfs files (kernel docs, "amdgpu: misc_device_attributes":
 * `mem_info_vram_total`, `mem_info_vram_used`, both in bytes), one `card<N>` directory per
 * DRM device under `/sys/class/drm`. No tool needs to be installed. `QM_SYSFS_ROOT` replaces
 * `/sys`, for tests. Cards are numbered 0, 1, … in `card<N>` order among those that report
 * VRAM — the order ROCm enumerates them in on the boxes we know of (an integrated GPU without
 * these files, or a connector like `card0-DP-1`, is skipped).
 */
import { readdir, readFile } from "node:fs/promises";
import type { GpuInfo, Parsed } from "../types.ts";

const MIB = 1024 * 1024;

/** The sysfs root: `$QM_SYSFS_ROOT` (tests), else `/sys`. */
export function sysfsRoot(env: Record<string, string | undefined> = process.env): string {
  return env.QM_SYSFS_ROOT || "/sys";
}

async function read(path: string): Promise<string | null> {
  return readFile(path, "utf8").then(
    (t) => t.trim(),
    () => null,
  );
}

/** A byte count as sysfs writes it ("25753026560\n"), or null. */
function bytes(text: string | null): number | null {
  return text !== null && /^\d+$/.test(text) ? Number(text) : null;
}

/**
 * The AMD cards that report VRAM, or null when there is none (not an AMD box, or no amdgpu
 * driver). A card whose files exist but cannot be understood fails the reading.
 */
export async function readAmdCards(root = sysfsRoot()): Promise<Parsed<GpuInfo[]> | null> {
  const drm = `${root}/class/drm`;
  const names = await readdir(drm).catch(() => [] as string[]);
  const numbers = names
    .map((n) => /^card(\d+)$/.exec(n)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
  const gpus: GpuInfo[] = [];
  for (const n of numbers) {
    const dev = `${drm}/card${n}/device`;
    const totalText = await read(`${dev}/mem_info_vram_total`);
    if (totalText === null) continue;
    const total = bytes(totalText);
    const used = bytes(await read(`${dev}/mem_info_vram_used`));
    if (total === null || used === null || used > total) {
      return { ok: false, reason: `card${n}: unreadable VRAM figures in ${dev}/mem_info_vram_*` };
    }
    const id = (await read(`${dev}/unique_id`)) || `card${n}`;
    const name = (await read(`${dev}/product_name`)) || `AMD GPU (card${n})`;
    gpus.push({
      index: gpus.length,
      uuid: `AMD-${id}`,
      name,
      totalMib: total / MIB,
      usedMib: used / MIB,
      freeMib: (total - used) / MIB,
    });
  }
  return gpus.length === 0 ? null : { ok: true, value: gpus };
}
