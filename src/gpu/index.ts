export { type AttributionInput, attribute } from "./attribute.ts";
export { type CeilingInput, effectiveBudgetGb, ForeignBaseline, liveCeiling } from "./ceiling.ts";
export {
  type OwnPids,
  OwnProcesses,
  type ProcessView,
  RELEASE_SETTLE_MS,
} from "./own-processes.ts";
export { COMPUTE_APPS_FIELDS, parseComputeApps } from "./parse-compute-apps.ts";
export { GPU_QUERY_FIELDS, parseGpuQuery } from "./parse-gpu-query.ts";
export { DEFAULT_PROBE_TIMEOUT_MS, type ProbeOptions, probeGpu } from "./probe.ts";
export { type ProcessTree, parseStat, procTree, treeFromChildren } from "./process-tree.ts";
export { type SpawnRequest, type SpawnVerdict, spawnGuard } from "./spawn-guard.ts";
export type {
  Attribution,
  CardReading,
  ComputeApp,
  GpuInfo,
  GpuKind,
  GpuReading,
  Parsed,
  ProbeResult,
} from "./types.ts";
export { BYTES_PER_GB, MIB_PER_GB } from "./units.ts";
