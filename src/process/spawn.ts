/**
 * Starting a model's server process: in a session of its own (`detached: true` calls
 * setsid(2), so the model and all it spawns form one process group, which the death watch
 * ends if qm dies outright: death-watch.ts), with `env` added to qm's environment. Every way it cannot start becomes `upstream_start_failed`
 * naming the model and its command.
 */
import { accessSync, constants } from "node:fs";
import { fillGpuIds } from "../config/macros.ts";
import type { ModelConfig } from "../config/types.ts";
import { placementEnv } from "../gpu/visible-devices.ts";
import { QmError } from "../shared/errors.ts";

export type ModelSubprocess = Bun.Subprocess<"ignore", "pipe", "pipe">;

/**
 * `gpus`: the cards this start was placed on (several GPUs): they fill `${GPU_IDS}` in the
 * command and its env, and become `CUDA_VISIBLE_DEVICES`. Absent: the box as today (`${GPU_IDS}`
 * reads "0", the environment's own `CUDA_VISIBLE_DEVICES` stands).
 */
export function spawnModel(
  model: ModelConfig,
  extraEnv: Record<string, string>,
  gpus?: readonly number[],
): ModelSubprocess {
  if (model.argv.length === 0) {
    throw new QmError("upstream_start_failed", `model "${model.id}" has an empty cmd`);
  }
  const own = withGpuIds(model, gpus).env;
  // CUDA_VISIBLE_DEVICES, or on an AMD box ROCm's variables (src/gpu/visible-devices.ts).
  const placed = gpus && gpus.length > 0 ? placementEnv(gpus) : {};
  const env = { ...process.env, ...placed, ...own, ...extraEnv };
  const argv = model.argv.map((a) => fillGpuIds(a, gpus));
  const failed = (why: string, cause?: unknown) =>
    new QmError("upstream_start_failed", `model "${model.id}" could not be started: ${why}`, {
      detail: `command: ${model.cmd}`,
      ...(cause === undefined ? {} : { cause }),
    });
  const missing = missingProgram(argv[0]!, env);
  if (missing) throw failed(missing);
  try {
    return Bun.spawn(argv, {
      env,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      detached: true,
    });
  } catch (err) {
    throw failed(err instanceof Error ? err.message : String(err), err);
  }
}

/** `model` with `${GPU_IDS}` filled in its `cmd_stop` and `env` (its argv: `spawnModel`). */
export function withGpuIds(model: ModelConfig, gpus: readonly number[] | undefined): ModelConfig {
  const env = Object.fromEntries(
    Object.entries(model.env).map(([k, v]) => [k, fillGpuIds(v, gpus)]),
  );
  return { ...model, cmdStop: fillGpuIds(model.cmdStop, gpus), env };
}

/**
 * Bun's own error for a program that is not there names no model; find it first so the
 * error names the command plainly. Returns a message, or null when the program can run.
 */
export function missingProgram(
  program: string,
  env: Record<string, string | undefined>,
): string | null {
  if (program.includes("/")) {
    try {
      accessSync(program, constants.X_OK);
      return null;
    } catch {
      return `"${program}" does not exist or is not executable`;
    }
  }
  const PATH = env.PATH ?? process.env.PATH ?? "";
  return Bun.which(program, { PATH }) ? null : `"${program}" was not found on PATH`;
}
