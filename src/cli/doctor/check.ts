/**
 * What `qm doctor` is made of: a list of checks, each turning the box and the config into
 * findings — one line each, passed, failed (with the fix) or a note (something worth knowing
 * that is not wrong, e.g. no GPU). A new check is one more entry in `DOCTOR_CHECKS`
 * (checks.ts); everything a check touches outside the config comes through `DoctorDeps`, so
 * tests give it a box of their own.
 */
import type { Config } from "../../config/types.ts";
import type { GgufModel } from "../../gpu/gguf/types.ts";
import type { ProbeResult } from "../../gpu/types.ts";
import type { PlatformReport, UnifiedGpuBudget } from "../../platform/types.ts";
import type { Fetch } from "../../shared/fetch.ts";

export interface Finding {
  /** What was checked: `config`, `program qwen-7b`, `port 127.0.0.1:8080`. */
  name: string;
  ok: boolean;
  detail: string;
  /** How to fix it; on failed findings only. */
  fix?: string;
  /** Passed, but worth a look (no GPU, a reading qm cannot trust). */
  note?: boolean;
}

export const pass = (name: string, detail: string): Finding => ({ name, ok: true, detail });
export const note = (name: string, detail: string): Finding => ({
  name,
  ok: true,
  detail,
  note: true,
});
export const fail = (name: string, detail: string, fix: string): Finding => ({
  name,
  ok: false,
  detail,
  fix,
});

/** The outcome of trying to bind a listener's address for a moment. */
export type BindOutcome =
  | { kind: "free" }
  | { kind: "in use"; holder: string }
  | { kind: "no such address" }
  | { kind: "denied" };

/** The box as the checks see it. */
export interface DoctorDeps {
  /** A program's path on `PATH` (or the path itself when executable), else null. */
  which(program: string, path: string): string | null;
  bind(host: string, port: number): BindOutcome;
  /** Creates the folder if need be and writes a file in it; null, or why it cannot. */
  writable(dir: string): string | null;
  probeGpu(command: string): Promise<ProbeResult>;
  /** A GGUF model's header (all parts of a split one), or why it cannot be read. */
  readModel(path: string): Promise<{ ok: true; model: GgufModel } | { ok: false; reason: string }>;
  /** Whether this box's process table shows the pid (false also where there is none). */
  pidVisible(pid: number): boolean;
  /** The platform's report, and on Apple Silicon the GPU's share of the unified memory. */
  platform(): { report: PlatformReport; unified: UnifiedGpuBudget | null };
  /** Whether qm runs inside a container (/.dockerenv, /run/.containerenv). */
  inContainer(): boolean;
  /**
   * Opens qm's database (`[store]`) as `qm serve` would and closes it again: what it holds, or
   * why it cannot be opened.
   */
  database(
    file: string,
  ):
    | { ok: true; bytes: number; responses: number; requests: number }
    | { ok: false; reason: string };
  env: Record<string, string | undefined>;
  /** How managed nodes and a running qm are asked (absent: nodes are not asked). */
  fetch?: Fetch;
}

export interface DoctorContext {
  /** The config file's path, as given or found. */
  path: string;
  /** The loaded config, or null when it did not load (then `configError` says why). */
  config: Config | null;
  configError: string | null;
  deps: DoctorDeps;
  /** The GPU probe's answer, asked once however many checks want it. */
  gpu(): Promise<ProbeResult>;
}

export interface DoctorCheck {
  /** Short and stable (`ports`, `gpu`): what later checks and tests refer to. */
  id: string;
  run(ctx: DoctorContext): Finding[] | Promise<Finding[]>;
}
