/**
 * The GPU probe: runs `resources.gpu_probe` (default "nvidia-smi"; "off" disables) twice —
 * per-GPU memory and per-process memory — and turns the answers into a trusted reading
 * or a reason, phrased for `qm status`, why the static budget applies instead.
 * The two queries run concurrently; they are a moment apart either way.
 */
import { splitCommand } from "../config/argv.ts";
import type { Timers } from "../shared/timer.ts";
import { attribute } from "./attribute.ts";
import { COMPUTE_APPS_FIELDS, parseComputeApps } from "./parse-compute-apps.ts";
import { GPU_QUERY_FIELDS, parseGpuQuery } from "./parse-gpu-query.ts";
import { exitCodeReason, smiFailure } from "./parse-smi-failure.ts";
import { type ProcessTree, procTree } from "./process-tree.ts";
import { type CommandResult, runCommand } from "./run-command.ts";
import type { ProbeResult } from "./types.ts";

export const DEFAULT_PROBE_TIMEOUT_MS = 2000;
const SUFFIX = ": static budget applies";

export interface ProbeOptions {
  /** `resources.gpu_probe`: a command (split shell-style, may carry arguments) or "off". */
  command: string;
  /** Pids of the model processes qm started that should be on the GPU (ready models). */
  ourPids?: readonly number[];
  /**
   * Pids of qm's other model processes (starting, stopping, just exited): their memory is
   * ours when nvidia-smi lists them, but they need not be listed for the reading to count.
   */
  transientPids?: readonly number[];
  timeoutMs?: number;
  /** How to expand `ourPids` to their descendants; defaults to reading /proc. */
  processTree?: ProcessTree;
  /** The commands' deadline runs on these; default real. */
  timers?: Timers;
}

export async function probeGpu(opts: ProbeOptions): Promise<ProbeResult> {
  const command = opts.command.trim();
  if (command === "" || command === "off") {
    return { ok: false, reason: `GPU probe off (resources.gpu_probe)${SUFFIX}` };
  }
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
  const roots = [...expected, ...(opts.transientPids ?? [])];
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
    (opts.processTree ?? procTree())(roots),
  ]);
  const gpuText = outputOf(gpuRun, name, timeoutMs);
  if (!gpuText.ok) return gpuText;
  const gpus = parseGpuQuery(gpuText.text);
  if (!gpus.ok) return { ok: false, reason: gpus.reason + SUFFIX };
  const appsText = outputOf(appsRun, name, timeoutMs);
  if (!appsText.ok) return appsText;
  const apps = parseComputeApps(appsText.text);
  if (!apps.ok) return { ok: false, reason: apps.reason + SUFFIX };
  const reading = attribute({
    gpus: gpus.value,
    apps: apps.value,
    ours,
    expectOurs: expected.length > 0,
  });
  return reading.ok
    ? { ok: true, reading: reading.value }
    : { ok: false, reason: reading.reason + SUFFIX };
}

function outputOf(
  run: CommandResult,
  name: string,
  timeoutMs: number,
): { ok: true; text: string } | { ok: false; reason: string } {
  if (!run.ok) {
    if (run.kind === "not_found") return { ok: false, reason: `${name} not found${SUFFIX}` };
    if (run.kind === "timeout") {
      return { ok: false, reason: `${name} did not answer within ${timeoutMs / 1000} s${SUFFIX}` };
    }
    return { ok: false, reason: `cannot run ${name}: ${run.detail}${SUFFIX}` };
  }
  // nvidia-smi writes its error messages to stdout; stderr is a fallback for wrappers.
  const text = run.stdout.trim() === "" ? run.stderr : run.stdout;
  if (run.exitCode !== 0) {
    return { ok: false, reason: (smiFailure(text) ?? exitCodeReason(run.exitCode, name)) + SUFFIX };
  }
  return { ok: true, text };
}
