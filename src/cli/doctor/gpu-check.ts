/**
 * The GPU probe's answer (`resources.gpu_probe`, "auto" by default) and the kind of GPU it
 * found — NVIDIA, NVIDIA with unified memory, AMD, Apple silicon or none — leading the line;
 * and how qm will tell its models' memory once they run. No GPU, no nvidia-smi, Apple silicon
 * or the probe switched off is a note: qm then applies the static budget. A probe that exists
 * and fails otherwise (a driver/library mismatch, a timeout) fails the check.
 *
 * Inside a container with its own PID namespace nvidia-smi reports the host's pids, and qm never
 * finds its models among them: it then attributes memory by change (src/gpu/by-change.ts),
 * which is coarser than by process. Listed pids this box's /proc does not show are that case;
 * with none listed it cannot be told yet, and a container is named.
 */
import { GPU_KIND_NAMES } from "../../gpu/kind.ts";
import type { ProbeResult } from "../../gpu/types.ts";
import { fmtGb } from "../../gpu/units.ts";
import { type DoctorCheck, fail, note, pass } from "./check.ts";

/** Probe failures that mean "no NVIDIA GPU here", not "something is broken". */
const NO_GPU =
  /not found|GPU probe off|gpu_probe is empty|found no GPU|cannot talk to the NVIDIA driver|driver is not loaded/;

/** "AMD (sysfs): " before the detail, when the probe said what it found. */
function kindOf(result: ProbeResult): string {
  const kind = result.ok ? result.reading.kind : result.kind;
  return kind ? `${GPU_KIND_NAMES[kind]}: ` : "";
}

export const gpuCheck: DoctorCheck = {
  id: "gpu",
  async run(ctx) {
    const command = ctx.config?.resources.gpuProbe ?? "auto";
    const result = await ctx.gpu();
    // The tool to run by hand: the configured command, or what "auto" runs for this kind.
    const tool =
      result.ok || !["auto", "amd", "unified"].includes(command)
        ? command
        : result.kind === "amd" || command === "amd"
          ? "amd-smi process"
          : "nvidia-smi";
    const kind = kindOf(result);
    if (!result.ok) {
      if (NO_GPU.test(result.reason) || result.kind === "apple" || result.kind === "none") {
        return [note("gpu", kind + result.reason)];
      }
      return [
        fail(
          "gpu",
          kind + result.reason,
          `run '${tool}' by hand to see the driver's own message (a reboot after a driver update?), or set resources.gpu_probe = "off"`,
        ),
      ];
    }
    const r = result.reading;
    const names = [...new Set(r.gpus.map((g) => g.name))].join(", ");
    const what = `${kind}${r.gpus.length} GPU${r.gpus.length === 1 ? "" : "s"} (${names}): ${fmtGb(r.totalGb)} GB, ${fmtGb(r.freeGb)} GB free`;
    const hidden = r.apps.filter((a) => !ctx.deps.pidVisible(a.pid)).map((a) => a.pid);
    if (hidden.length > 0) {
      return [
        note(
          "gpu",
          `${what}; not trusted once models run: nvidia-smi lists pids this box's /proc does not show (${hidden.slice(0, 5).join(", ")}), as in a container with its own PID namespace — qm cannot tell its models' memory from others' by process, so it attributes it by change (what appeared while each model started); run the container with --pid=host for exact figures`,
        ),
      ];
    }
    if (r.apps.length === 0 && ctx.deps.inContainer()) {
      return [
        note(
          "gpu",
          `${what}; inside a container: unless it shares the host's PID namespace (--pid=host), nvidia-smi's pids will not be qm's and memory is attributed by change (nothing runs on the GPU now to tell)`,
        ),
      ];
    }
    return [pass("gpu", what)];
  },
};
