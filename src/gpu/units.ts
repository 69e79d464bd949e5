/**
 * Units. nvidia-smi reports memory in MiB (`--format=csv,nounits` drops the "MiB" suffix;
 * see `nvidia-smi --help-query-gpu`), and qm's budgets (`vram_budget_gb`, `est_vram_gb`)
 * are in "GB" meaning GiB: 1 GB = 1024 MiB = 2^30 bytes. Using binary units end to end keeps
 * an estimate comparable with what nvidia-smi shows for the same process.
 */
export const MIB_PER_GB = 1024;
export const BYTES_PER_GB = 2 ** 30;

export function mibToGb(mib: number): number {
  return mib / MIB_PER_GB;
}

export function bytesToGb(bytes: number): number {
  return bytes / BYTES_PER_GB;
}

/** One decimal for messages: 6.25 → "6.3". */
export function fmtGb(gb: number): string {
  return (Math.round(gb * 10) / 10).toFixed(1);
}
