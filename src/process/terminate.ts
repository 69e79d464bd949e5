/**
 * Graceful stop with escalation (the execa pattern): ask politely — `cmd_stop` when the
 * model has one, else SIGTERM to the model's processes — and SIGKILL them once
 * `stop_timeout_s` has passed. Resolves when the process has exited and `cmd_stop`, if it
 * ran, has too: a stop command still running after the model went (`sh -c "kill …; sleep"`)
 * is waited for within the same `stop_timeout_s`, then SIGKILLed, so "stopped" leaves no
 * process of the model's behind. The escalation runs on the injected timers, so a test moves a
 * fake clock past `stop_timeout_s` instead of waiting for it.
 */
import type { ModelConfig } from "../config/types.ts";
import type { Logger } from "../shared/log.ts";
import type { Timers } from "../shared/timer.ts";
import { runStopCommand, type StopCommand } from "./stop-command.ts";

export interface Stoppable {
  readonly model: ModelConfig;
  /** Also the process group id (the model is its group's leader). */
  readonly pid: number;
  /** Settles once the process has exited. */
  readonly exit: Promise<unknown>;
  readonly exited: boolean;
  /** Signals the process group and the descendants that left it. */
  signal(signal: NodeJS.Signals): void;
}

export async function terminate(
  target: Stoppable,
  log: Logger,
  onLine: (line: string) => void,
  timers: Timers,
): Promise<void> {
  const { model, pid } = target;
  let stopCmd: StopCommand | null = null;
  const escalate = timers.set(
    () => {
      if (target.exited) {
        log.warn(
          `model "${model.id}": cmd_stop still running after ${model.stopTimeoutS} s; killing it`,
        );
      } else {
        log.warn(
          `model "${model.id}" still running ${model.stopTimeoutS} s after the stop request; sending SIGKILL`,
        );
        target.signal("SIGKILL");
      }
      stopCmd?.kill();
    },
    Math.max(0, model.stopTimeoutS * 1000),
  );
  try {
    if (model.cmdStop.trim() === "") {
      target.signal("SIGTERM");
    } else {
      const started = runStopCommand(
        model.cmdStop,
        pid,
        model.env,
        (l) => onLine(`[cmd_stop] ${l}`),
        timers,
      );
      if ("error" in started) {
        log.warn(`model "${model.id}": ${started.error}; sending SIGTERM instead`);
        target.signal("SIGTERM");
      } else {
        stopCmd = started;
        const ok = await Promise.race([started.done, target.exit.then(() => true)]);
        if (!ok && !target.exited) {
          log.warn(`model "${model.id}": cmd_stop failed; sending SIGTERM instead`);
          target.signal("SIGTERM");
        }
      }
    }
    await target.exit;
    if (stopCmd) await stopCmd.done;
  } finally {
    timers.clear(escalate);
  }
}
