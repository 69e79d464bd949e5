/**
 * The platform qm runs on and what its supervision gets from it (src/platform): the process
 * table, the child subreaper, the death watch, who holds a port, and on Apple Silicon
 * the unified memory an `"auto"` budget plans for. Linux with all of it passes; anything less
 * is a note, saying what is weaker (docs/security.md), never a failure: qm runs either way.
 */
import { fmtGb } from "../../gpu/units.ts";
import { type DoctorCheck, type Finding, note, pass } from "./check.ts";

const GIB = 1024 ** 3;

export const platformCheck: DoctorCheck = {
  id: "platform",
  run({ deps }): Finding[] {
    const { report, unified } = deps.platform();
    const has: string[] = [];
    const lacks: string[] = [];
    (report.processTable ? has : lacks).push("a process table (start times)");
    (report.subreaper ? has : lacks).push("a child subreaper");
    (report.deathWatch ? has : lacks).push("a death watch (models die with qm)");
    (report.portHolders ? has : lacks).push("port holders");
    const parts = [`${report.name}`];
    if (has.length > 0) parts.push(`has ${has.join(", ")}`);
    if (lacks.length > 0) {
      parts.push(
        `lacks ${lacks.join(", ")}: each model's process group is stopped as a whole, and one that leaves its group can outlive qm (docs/security.md)`,
      );
    }
    if (unified) {
      const from = unified.source === "default" ? "Metal's default share" : "iogpu.wired_limit_mb";
      parts.push(
        `unified memory: the GPU may use ${fmtGb(unified.bytes / GIB)} of ${fmtGb(unified.ramBytes / GIB)} GB (${from}), what vram_budget_gb = "auto" plans for`,
      );
    }
    const detail = parts.join("; ");
    return [lacks.length === 0 ? pass("platform", detail) : note("platform", detail)];
  },
};
