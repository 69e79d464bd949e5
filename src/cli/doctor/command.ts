/**
 * `qm doctor [-c FILE] [--json]`: what a person runs on a new box. One line per finding —
 * ✓ passed, ✗ failed (with the fix), • a note — or, with --json,
 * `{"ok", "checks": [{"name", "ok", "detail", "fix"}]}`. Exit 1 when any check failed.
 */
import type { ProbeResult } from "../../gpu/types.ts";
import { parse } from "../args.ts";
import { configPath, loadForCli } from "../config-path.ts";
import { DOCTOR_HELP } from "../help.ts";
import type { DoctorCheck, DoctorContext, DoctorDeps, Finding } from "./check.ts";
import { DOCTOR_CHECKS } from "./checks.ts";
import { realDeps } from "./deps.ts";

export interface DoctorIo {
  out(text: string): void;
  deps: DoctorDeps;
  checks?: readonly DoctorCheck[];
}

const stdio: DoctorIo = { out: (t) => process.stdout.write(t), deps: realDeps };

export async function doctorCommand(argv: string[], io: DoctorIo = stdio): Promise<number> {
  const { values } = parse(
    argv,
    { config: { type: "string", short: "c" }, json: { type: "boolean" } },
    false,
  );
  if (values.help) {
    io.out(DOCTOR_HELP);
    return 0;
  }
  const path = configPath(values.config);
  const loaded = loadForCli(path);
  const config = loaded.ok ? loaded.config : null;
  let gpu: Promise<ProbeResult> | null = null;
  const ctx: DoctorContext = {
    path,
    config,
    // One line: the loader's issues, each `FILE:LINE:COL: KEY: message`, joined.
    configError: loaded.ok ? null : loaded.message.split("\n").join("; "),
    deps: io.deps,
    gpu: () => {
      gpu ??= io.deps.probeGpu(config?.resources.gpuProbe ?? "auto");
      return gpu;
    },
  };
  const findings: Finding[] = [];
  for (const check of io.checks ?? DOCTOR_CHECKS) {
    try {
      findings.push(...(await check.run(ctx)));
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      findings.push({
        name: check.id,
        ok: false,
        detail: `the check itself failed: ${why}`,
        fix: "report this as a bug in qm",
      });
    }
  }
  const ok = findings.every((f) => f.ok);
  io.out(values.json ? `${JSON.stringify({ ok, checks: findings }, null, 2)}\n` : render(findings));
  return ok ? 0 : 1;
}

const MARK = { pass: "✓", fail: "✗", note: "•" };

export function render(findings: readonly Finding[]): string {
  const lines = findings.map((f) => {
    const mark = !f.ok ? MARK.fail : f.note ? MARK.note : MARK.pass;
    return `${mark} ${f.name}: ${f.detail}${f.fix ? ` — fix: ${f.fix}` : ""}`;
  });
  const failed = findings.filter((f) => !f.ok).length;
  lines.push(
    failed === 0
      ? `all ${findings.length} checks passed`
      : `${failed} of ${findings.length} checks failed`,
  );
  return `${lines.join("\n")}\n`;
}
