/**
 * Graceful stop with escalation (the execa pattern): ask politely — `cmd_stop` when the
 * model has one, else SIGTERM to the process group — and SIGKILL the group once
 * `stop_timeout_s` has passed. Resolves when the process has exited.
 */
import type { ModelConfig } from "../config/types.ts";
import type { Logger } from "../shared/log.ts";
import { signalGroup } from "./process-group.ts";
import { runStopCommand, type StopCommand } from "./stop-command.ts";

export interface Stoppable {
  readonly model: ModelConfig;
  /** Also the process group id (the model is its group's leader). */
  readonly pid: number;
  /** Settles once the process has exited. */
  readonly exit: Promise<unknown>;
  readonly exited: boolean;
}

export async function terminate(
  target: Stoppable,
  log: Logger,
  onLine: (line: string) => void,
): Promise<void> {
  const { model, pid } = target;
  let stopCmd: StopCommand | null = null;
  const escalate = setTimeout(
    () => {
      log.warn(
        `model "${model.id}" still running ${model.stopTimeoutS} s after the stop request; sending SIGKILL`,
      );
      signalGroup(pid, "SIGKILL");
      stopCmd?.kill();
    },
    Math.max(0, model.stopTimeoutS * 1000),
  );
  try {
    if (model.cmdStop.trim() === "") {
      signalGroup(pid, "SIGTERM");
    } else {
      const started = runStopCommand(model.cmdStop, pid, model.env, (l) =>
        onLine(`[cmd_stop] ${l}`),
      );
      if ("error" in started) {
        log.warn(`model "${model.id}": ${started.error}; sending SIGTERM instead`);
        signalGroup(pid, "SIGTERM");
      } else {
        stopCmd = started;
        const ok = await Promise.race([started.done, target.exit.then(() => true)]);
        if (!ok && !target.exited) {
          log.warn(`model "${model.id}": cmd_stop failed; sending SIGTERM instead`);
          signalGroup(pid, "SIGTERM");
        }
      }
    }
    await target.exit;
  } finally {
    clearTimeout(escalate);
  }
}
