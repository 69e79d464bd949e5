/**
 * AMD cards: total and used VRAM per card from sysfs (./sysfs.ts), and — only while qm has
 * model processes, since the tools are slow Python programs — which processes hold it, from
 * `amd-smi process --json` or else `rocm-smi --showpids` (./parse-processes.ts). With neither
 * installed (or neither understood) qm's share is attributed by change (runtime/gpu-watch.ts).
 */
import { splitCommand } from "../../config/argv.ts";
import { attribute } from "../attribute.ts";
import {
  attributed,
  DEFAULT_PROBE_TIMEOUT_MS,
  ourTree,
  type ProbeOptions,
  SUFFIX,
} from "../probe-options.ts";
import { runCommand } from "../run-command.ts";
import type { ComputeApp, GpuInfo, Parsed, ProbeResult } from "../types.ts";
import { parseAmdSmiProcesses, parseRocmSmiPids } from "./parse-processes.ts";
import { readAmdCards, sysfsRoot } from "./sysfs.ts";

export async function probeAmd(opts: ProbeOptions): Promise<ProbeResult> {
  const root = opts.sysfsRoot ?? sysfsRoot();
  const [cards, ours] = await Promise.all([readAmdCards(root), ourTree(opts)]);
  if (cards === null) {
    return {
      ok: false,
      kind: "none",
      reason: `no AMD card found in ${root}/class/drm (amdgpu driver loaded?)${SUFFIX}`,
    };
  }
  if (!cards.ok) return { ok: false, kind: "amd", reason: cards.reason + SUFFIX };
  const gpus = cards.value;
  const listed = ours.size > 0 ? await processes(opts, gpus) : { ok: true as const, value: [] };
  const expectOurs = (opts.ourPids ?? []).length > 0;
  if (!listed.ok) {
    // No per-process figures: fine while qm's models are not required on a card; else only
    // attribution by change can split the cards' memory.
    const raw = attribute({ gpus, apps: [], ours, expectOurs: false });
    if (!expectOurs && raw.ok) return { ok: true, reading: { ...raw.value, kind: "amd" } };
    return {
      ok: false,
      kind: "amd",
      reason: listed.reason + SUFFIX,
      ...(raw.ok ? { unattributed: { ...raw.value, kind: "amd" } } : {}),
    };
  }
  const input = { gpus, apps: listed.value, ours, source: listed.source };
  return attributed(attribute({ ...input, expectOurs }), "amd", () =>
    attribute({ ...input, expectOurs: false }),
  );
}

type Listed = { ok: true; value: ComputeApp[]; source?: string } | { ok: false; reason: string };

/** The processes on the cards, from the first tool installed that answers. */
async function processes(opts: ProbeOptions, gpus: readonly GpuInfo[]): Promise<Listed> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const tools: [string, string[], (t: string, g: readonly GpuInfo[]) => Parsed<ComputeApp[]>][] = [
    [opts.amdSmi ?? "amd-smi", ["process", "--json"], parseAmdSmiProcesses],
    [opts.rocmSmi ?? "rocm-smi", ["--showpids"], parseRocmSmiPids],
  ];
  const why: string[] = [];
  for (const [command, args, parse] of tools) {
    const argv = splitCommand(command);
    const name = argv[0]?.split("/").pop() ?? command;
    const run = await runCommand([...argv, ...args], timeoutMs, opts.timers);
    if (!run.ok) {
      why.push(run.kind === "not_found" ? `${name} not installed` : `${name}: ${run.detail}`);
      continue;
    }
    if (run.exitCode !== 0) {
      why.push(`${name} exited ${run.exitCode}`);
      continue;
    }
    const apps = parse(run.stdout, gpus);
    if (apps.ok) return { ok: true, value: apps.value, source: name };
    why.push(apps.reason);
  }
  return { ok: false, reason: `no per-process GPU memory on this AMD box (${why.join("; ")})` };
}
