/**
 * The GPU probe: reads the GPUs' memory with what `resources.gpu_probe` names and turns the
 * answer into a trusted reading, or a reason (phrased for `qm status`) why the static budget
 * applies instead.
 *
 * - `"auto"` (the default): nvidia-smi if it is installed and finds a GPU, else AMD cards in
 *   sysfs, else none (Apple silicon is named, not read).
 * - a command (`"nvidia-smi"`, a path, with arguments): nvidia-smi's two CSV queries — per-GPU
 *   memory and per-process memory, run concurrently (they are a moment apart either way). A GPU
 *   listed with `[N/A]` memory is a unified-memory part: the system's memory and the RSS of
 *   qm's trees, as the platform reads them (src/platform).
 * - `"amd"`: AMD cards (./amd/probe.ts); `"unified"`: the system's memory without nvidia-smi (a
 *   Jetson without it); `"off"`: no probe.
 */
import { splitCommand } from "../config/argv.ts";
import { platform } from "../platform/index.ts";
import { probeAmd } from "./amd/probe.ts";
import { attribute } from "./attribute.ts";
import { systemMemory, unifiedMemory } from "./meminfo.ts";
import { COMPUTE_APPS_FIELDS, parseComputeApps } from "./parse-compute-apps.ts";
import {
  GPU_QUERY_FIELDS,
  parseGpuQuery,
  parseUnifiedGpus,
  type UnifiedGpu,
} from "./parse-gpu-query.ts";
import { exitCodeReason, smiFailure } from "./parse-smi-failure.ts";
import {
  attributed,
  DEFAULT_PROBE_TIMEOUT_MS,
  ourTree,
  type ProbeOptions,
  SUFFIX,
} from "./probe-options.ts";
import { platformRss } from "./rss.ts";
import { type CommandResult, runCommand } from "./run-command.ts";
import type { GpuKind, ProbeResult } from "./types.ts";
import { unifiedReading } from "./unified.ts";

export { DEFAULT_PROBE_TIMEOUT_MS, type ProbeOptions } from "./probe-options.ts";

export async function probeGpu(opts: ProbeOptions): Promise<ProbeResult> {
  const command = opts.command.trim();
  if (command === "" || command === "off") {
    return { ok: false, reason: `GPU probe off (resources.gpu_probe)${SUFFIX}` };
  }
  if (command === "auto") return probeAuto(opts);
  if (command === "amd") return probeAmd(opts);
  if (command === "unified") {
    return probeUnified(opts, [{ index: 0, uuid: "GPU-unified", name: "unified memory" }]);
  }
  return probeNvidia(opts, command);
}

/** nvidia-smi where it finds a GPU; else AMD cards; else Apple silicon or none, named. */
async function probeAuto(opts: ProbeOptions): Promise<ProbeResult> {
  const nvidia = await probeNvidia(opts, opts.nvidiaSmi ?? "nvidia-smi");
  if (nvidia.ok || nvidia.kind !== "none") return nvidia;
  const amd = await probeAmd(opts);
  if (amd.ok || amd.kind !== "none") return amd;
  if ((opts.platform ?? platform.name) === "darwin") {
    return {
      ok: false,
      kind: "apple",
      reason: `Apple silicon: qm has no live reading of its unified memory yet${SUFFIX}`,
    };
  }
  const nvidiaWhy = nvidia.reason.slice(0, -SUFFIX.length);
  return {
    ok: false,
    kind: "none",
    reason: `no GPU found (${nvidiaWhy}, no AMD card in /sys/class/drm)${SUFFIX}`,
  };
}

async function probeNvidia(opts: ProbeOptions, command: string): Promise<ProbeResult> {
  let argv: string[];
  try {
    argv = splitCommand(command);
  } catch (err) {
    return { ok: false, reason: `cannot parse resources.gpu_probe: ${String(err)}${SUFFIX}` };
  }
  if (argv.length === 0) return { ok: false, reason: `resources.gpu_probe is empty${SUFFIX}` };
  const name = argv[0]!.split("/").pop()!;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const expected = opts.ourPids ?? [];
  const [gpuRun, appsRun, ours] = await Promise.all([
    runCommand(
      [...argv, `--query-gpu=${GPU_QUERY_FIELDS}`, "--format=csv,noheader,nounits"],
      timeoutMs,
      opts.timers,
    ),
    runCommand(
      [...argv, `--query-compute-apps=${COMPUTE_APPS_FIELDS}`, "--format=csv,noheader,nounits"],
      timeoutMs,
      opts.timers,
    ),
    ourTree(opts),
  ]);
  const gpuText = outputOf(gpuRun, name, timeoutMs);
  if (!gpuText.ok) return gpuText;
  const gpus = parseGpuQuery(gpuText.text);
  if (!gpus.ok) {
    const unified = parseUnifiedGpus(gpuText.text);
    if (unified) return probeUnified({ ...opts, processTree: async () => ours }, unified);
    return { ok: false, kind: "nvidia", reason: gpus.reason + SUFFIX };
  }
  const appsText = outputOf(appsRun, name, timeoutMs);
  if (!appsText.ok) return { ...appsText, kind: "nvidia" };
  const apps = parseComputeApps(appsText.text);
  if (!apps.ok) return { ok: false, kind: "nvidia", reason: apps.reason + SUFFIX };
  const input = { gpus: gpus.value, apps: apps.value, ours, source: name };
  return attributed(attribute({ ...input, expectOurs: expected.length > 0 }), "nvidia", () =>
    attribute({ ...input, expectOurs: false }),
  );
}

/** Unified memory: the system's memory, qm's share by the RSS of its trees. */
async function probeUnified(opts: ProbeOptions, gpus: UnifiedGpu[]): Promise<ProbeResult> {
  const ours = await ourTree(opts);
  const mem = unifiedMemory((opts.memory ?? systemMemory())());
  if (!mem) {
    return {
      ok: false,
      kind: "nvidia-unified",
      reason: `unified memory, but the box's /proc/meminfo cannot be read${SUFFIX}`,
    };
  }
  const rss = await (opts.rss ?? platformRss())([...ours]);
  const r = unifiedReading({ gpus, mem, ours, rss, expectOurs: (opts.ourPids ?? []).length > 0 });
  return r.ok
    ? { ok: true, reading: r.value }
    : { ok: false, kind: "nvidia-unified", reason: r.reason + SUFFIX };
}

export function outputOf(
  run: CommandResult,
  name: string,
  timeoutMs: number,
): { ok: true; text: string } | { ok: false; reason: string; kind?: GpuKind } {
  if (!run.ok) {
    if (run.kind === "not_found") {
      return { ok: false, kind: "none", reason: `${name} not found${SUFFIX}` };
    }
    if (run.kind === "timeout") {
      return { ok: false, reason: `${name} did not answer within ${timeoutMs / 1000} s${SUFFIX}` };
    }
    return { ok: false, reason: `cannot run ${name}: ${run.detail}${SUFFIX}` };
  }
  // nvidia-smi writes its error messages to stdout; stderr is a fallback for wrappers.
  const text = run.stdout.trim() === "" ? run.stderr : run.stdout;
  if (run.exitCode !== 0) {
    const known = smiFailure(text);
    // "No devices were found": the tool is there, the card is not (auto looks further).
    const kind: GpuKind = known === "nvidia-smi found no GPU" ? "none" : "nvidia";
    return { ok: false, kind, reason: (known ?? exitCodeReason(run.exitCode, name)) + SUFFIX };
  }
  return { ok: true, text };
}
