/**
 * `qm selftest [gpu] [--json]`: runs the GPU scenarios (./scenarios.ts) with demo models that
 * hold known memory and prints a verdict per check — ✓/✗ lines, or with --json
 * `{"ok": bool, "checks": [{"name", "ok", "detail"}]}`. Exit 0 only when every check passed.
 *
 * `qm selftest` simulates the memory (`qm demo-smi` stands in for nvidia-smi), so it runs on any
 * box; `qm selftest gpu` holds real memory through the NVIDIA driver and reads it with the
 * real probe, and on a box without the driver stops at the `driver` check.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cudaInfo } from "../../demo/cuda.ts";
import { killAllSync, startSupervision } from "../../process/index.ts";
import { createLogger } from "../../shared/log.ts";
import { parse, UsageError } from "../args.ts";
import { qmBin } from "../config-path.ts";
import { SELFTEST_HELP } from "../help.ts";
import { Holder } from "./bench.ts";
import { runScenarios } from "./scenarios.ts";
import { renderVerdicts, Verdicts } from "./verdicts.ts";

export interface SelftestIo {
  out(text: string): void;
  /** How the scenarios run qm (`${QM_BIN}`); default this very binary. */
  qm?: string;
}

const stdio: SelftestIo = { out: (t) => process.stdout.write(t) };

export async function selftestCommand(argv: string[], io: SelftestIo = stdio): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" } }, true);
  if (values.help) {
    io.out(SELFTEST_HELP);
    return 0;
  }
  if (positionals.length > 1 || (positionals[0] !== undefined && positionals[0] !== "gpu")) {
    throw new UsageError(`selftest takes "gpu" or nothing, not "${positionals.join(" ")}"`);
  }
  const real = positionals[0] === "gpu";
  const v = new Verdicts();
  if (!real || driverCheck(v)) await run(real, io.qm ?? qmBin(), v);
  io.out(
    values.json
      ? `${JSON.stringify({ ok: v.ok, checks: v.list }, null, 2)}\n`
      : renderVerdicts(v.list),
  );
  return v.ok ? 0 : 1;
}

/** The NVIDIA driver library answers, and has a device. */
function driverCheck(v: Verdicts): boolean {
  try {
    const { version, devices } = cudaInfo();
    if (devices.length === 0) {
      v.fail("driver", `libcuda.so.1 loads (CUDA ${version}) but lists no device`);
      return false;
    }
    const list = devices.map((d) => `${d.name} (${d.totalMib} MiB)`).join(", ");
    v.pass("driver", `libcuda.so.1: CUDA ${version}, ${devices.length} device(s): ${list}`);
    return true;
  } catch (err) {
    v.fail("driver", err instanceof Error ? err.message : String(err));
    return false;
  }
}

async function run(real: boolean, qm: string, v: Verdicts): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "qm-selftest-"));
  const supervision = startSupervision({
    stateDir: join(dir, "state"),
    log: createLogger("error", () => {}),
  });
  // Whatever ends this process, no demo model outlives it.
  const onExit = () => killAllSync();
  process.on("exit", onExit);
  try {
    await runScenarios({ real, qm, dir }, v);
  } finally {
    Holder.killAll();
    supervision.close();
    process.off("exit", onExit);
    rmSync(dir, { recursive: true, force: true });
  }
}
