/** What the GPU probes tell us, after parsing. Memory stays in MiB, as reported. */

/**
 * What kind of GPU memory qm reads: an NVIDIA card (nvidia-smi), an NVIDIA part whose memory is
 * the system's (Jetson, GB10: nvidia-smi reports it `[N/A]`, /proc/meminfo tells), an AMD card
 * (sysfs), Apple silicon (no live reading yet), or none found.
 */
export type GpuKind = "nvidia" | "nvidia-unified" | "amd" | "apple" | "none";

/**
 * How qm's share of the memory is known: from the processes the probe lists (`pids`), or by
 * change — what appeared while a model started and went when it stopped (`by_change`), where
 * the probe's process ids are not qm's (a container with its own PID namespace).
 */
export type Attribution = "pids" | "by_change";

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
  /** What was read; absent: an NVIDIA card (nvidia-smi). */
  kind?: GpuKind;
  /** qm's memory by process tree: root pid (a model process qm started) → GB, summed over cards. */
  byRoot?: ReadonlyMap<number, number>;
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
  /** qm's memory on this card by process tree: root pid → GB. */
  byRoot?: ReadonlyMap<number, number>;
}

/**
 * A probe's answer: a trusted reading, or why the static budget applies. `kind` says what was
 * found even when it cannot be read. `unattributed`: the cards were read but none of qm's
 * processes is among those listed while its models run (a PID namespace, no per-process
 * tool): every byte reads as foreign there, and only attribution by change can split it.
 */
export type ProbeResult =
  | { ok: true; reading: GpuReading }
  | { ok: false; reason: string; kind?: GpuKind; unattributed?: GpuReading };
