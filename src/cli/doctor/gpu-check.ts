/**
 * The GPU probe's answer (`resources.gpu_probe`, nvidia-smi by default), and whether qm could
 * trust it once models run. No GPU, no nvidia-smi, or the probe switched off is a note: qm
 * then applies the static budget. A probe that exists and fails otherwise (a driver/library
 * mismatch, a timeout) fails the check.
 *
 * Trust needs nvidia-smi's process ids to be the ones qm sees: inside a container with its own
 * PID namespace nvidia-smi reports the host's pids, qm never finds its models among them, and
 * the live budget stays static (src/gpu/attribute.ts). Listed pids this box's /proc does not
 * show are that case; with none listed it cannot be told yet, and a container is named.
 */
import { fmtGb } from "../../gpu/units.ts";
import { type DoctorCheck, fail, note, pass } from "./check.ts";

/** Probe failures that mean "no NVIDIA GPU here", not "something is broken". */
const NO_GPU =
  /not found|GPU probe off|gpu_probe is empty|found no GPU|cannot talk to the NVIDIA driver|driver is not loaded/;

export const gpuCheck: DoctorCheck = {
  id: "gpu",
  async run(ctx) {
    const command = ctx.config?.resources.gpuProbe ?? "nvidia-smi";
    const result = await ctx.gpu();
    if (!result.ok) {
      if (NO_GPU.test(result.reason)) return [note("gpu", result.reason)];
      return [
        fail(
          "gpu",
          result.reason,
          `run '${command}' by hand to see the driver's own message (a reboot after a driver update?), or set resources.gpu_probe = "off"`,
        ),
      ];
    }
    const r = result.reading;
    const names = [...new Set(r.gpus.map((g) => g.name))].join(", ");
    const what = `${r.gpus.length} GPU${r.gpus.length === 1 ? "" : "s"} (${names}): ${fmtGb(r.totalGb)} GB, ${fmtGb(r.freeGb)} GB free`;
    const hidden = r.apps.filter((a) => !ctx.deps.pidVisible(a.pid)).map((a) => a.pid);
    if (hidden.length > 0) {
      return [
        note(
          "gpu",
          `${what}; not trusted once models run: nvidia-smi lists pids this box's /proc does not show (${hidden.slice(0, 5).join(", ")}), as in a container with its own PID namespace — qm cannot tell its models' memory from others', so the static budget applies (run the container with --pid=host to fix it)`,
        ),
      ];
    }
    if (r.apps.length === 0 && ctx.deps.inContainer()) {
      return [
        note(
          "gpu",
          `${what}; inside a container: unless it shares the host's PID namespace (--pid=host), nvidia-smi's pids will not be qm's and the static budget applies (nothing runs on the GPU now to tell)`,
        ),
      ];
    }
    return [pass("gpu", what)];
  },
};
