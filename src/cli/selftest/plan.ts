/** What the self-test's scenarios share: their sizes, the probe they read, their config. */
import { type BenchMode, simDir } from "./bench.ts";

export const gb = (n: number) => `${(Math.round(n * 100) / 100).toFixed(2)} GB`;
export const RESERVE = 0.5;

/** What the scenarios size themselves by: the demo models' memory and the first reading. */
export interface Plan {
  mode: BenchMode;
  /** MiB each demo model (and the other program) holds. */
  mib: number;
  probe: string;
  cards: number;
  /** Card 0's free GB, idle. */
  free0: number;
}

/** The probe command of a scenario: real nvidia-smi, or `qm demo-smi` over the demo models. */
export function probeCommand(mode: BenchMode, opts: { hidePids?: boolean; cards?: number } = {}) {
  const hide = opts.hidePids ? " --hide-pids" : "";
  if (mode.real) return opts.hidePids ? `${mode.qm} demo-smi --from nvidia-smi${hide}` : "auto";
  return (
    `${mode.qm} demo-smi --dir ${JSON.stringify(simDir(mode))} --cards ${opts.cards ?? 1} ` +
    `--total-mib 24576 --base-mib 512 --release-lag-ms 600${hide}`
  );
}

export function head(mode: BenchMode, probe: string, resources: string): string {
  return (
    `[server]\nstate_dir = ${JSON.stringify(`${mode.dir}/state`)}\n` +
    `health_check_timeout_s = 60\nshutdown_timeout_s = 5\nlog_level = "info"\n\n` +
    `[resources]\ngpu_probe = ${JSON.stringify(probe)}\noom_guard_reserve_gb = ${RESERVE}\n${resources}\n`
  );
}

/** How far a measure may be from what a model holds: 5 % + 300 MiB. */
export function within(measuredGb: number, heldMib: number): boolean {
  return Math.abs(measuredGb * 1024 - heldMib) <= heldMib * 0.05 + 300;
}
