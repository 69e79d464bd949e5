/** What nvidia-smi tells us, after parsing. Memory stays in MiB, as reported. */

/** Parsing never throws: it yields a value or a reason the output cannot be trusted. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

/** One row of `--query-gpu=index,uuid,name,memory.total,memory.used,memory.free`. */
export interface GpuInfo {
  index: number;
  uuid: string;
  name: string;
  totalMib: number;
  usedMib: number;
  freeMib: number;
}

/** One row of `--query-compute-apps=pid,gpu_uuid,used_memory`. */
export interface ComputeApp {
  pid: number;
  gpuUuid: string;
  /** null where the driver does not report per-process memory (`[N/A]`, `[Not Supported]`). */
  usedMib: number | null;
}

/** A trusted reading: every figure in GB (GiB), summed over all listed GPUs. */
export interface GpuReading {
  gpus: GpuInfo[];
  apps: ComputeApp[];
  totalGb: number;
  usedGb: number;
  freeGb: number;
  /** Memory of processes qm started (and their descendants). */
  oursGb: number;
  /** usedGb − oursGb: everything else on the cards (desktop, games, other servers, driver). */
  foreignGb: number;
  /** The pids of qm's process trees that nvidia-smi lists. */
  ourPidsOnGpu: number[];
  /** The same figures card by card, in nvidia-smi's order (attribution per card). */
  cards?: CardReading[];
}

/** One card of a reading, in GB (GiB). */
export interface CardReading {
  index: number;
  totalGb: number;
  usedGb: number;
  freeGb: number;
  oursGb: number;
  foreignGb: number;
  /** qm's pids nvidia-smi lists on this card. */
  ourPids: number[];
}

export type ProbeResult = { ok: true; reading: GpuReading } | { ok: false; reason: string };
