/**
 * Starting a model's server process: in a session of its own (`detached: true` calls
 * setsid(2), so the model and all it spawns form one process group), killed by the kernel
 * if qm dies (death-signal.ts), with `env` added to qm's environment. Every way it cannot
 * start becomes `upstream_start_failed` naming the model and its command.
 */
import type { ModelConfig } from "../config/types.ts";
import { QmError } from "../shared/errors.ts";
import { missingProgram, withParentDeathSignal } from "./death-signal.ts";

export type ModelSubprocess = Bun.Subprocess<"ignore", "pipe", "pipe">;

export function spawnModel(model: ModelConfig, extraEnv: Record<string, string>): ModelSubprocess {
  if (model.argv.length === 0) {
    throw new QmError("upstream_start_failed", `model "${model.id}" has an empty cmd`);
  }
  const env = { ...process.env, ...model.env, ...extraEnv };
  const failed = (why: string, cause?: unknown) =>
    new QmError("upstream_start_failed", `model "${model.id}" could not be started: ${why}`, {
      detail: `command: ${model.cmd}`,
      ...(cause === undefined ? {} : { cause }),
    });
  const missing = missingProgram(model.argv[0]!, env);
  if (missing) throw failed(missing);
  try {
    return Bun.spawn(withParentDeathSignal(model.argv), {
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
