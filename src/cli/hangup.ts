/**
 * What SIGHUP means to `qm serve`. Two things send it: `kill -HUP` (systemd's ExecReload),
 * asking for a config reload, and the kernel when the terminal qm runs in goes away (a closed
 * window, `tmux kill-session`, a dropped ssh session), telling qm its session is over.
 *
 * They are told apart by the controlling terminal (tty(4), credentials(7)): a hang-up takes
 * it from every process of the session (the kernel's tty hang-up clears each one's), so
 * `/dev/tty` no longer opens. The rule:
 *   - qm had a terminal when it started and has none now → the terminal went away: stop, as
 *     on SIGTERM (in-flight requests finish, every model stops, the run file is removed) —
 *     unless SIGHUP was ignored when qm started (`nohup qm serve`), which asks qm to outlive
 *     its terminal: then it serves on;
 *   - otherwise (a service with no terminal, or a terminal still there) → reload the config.
 */
import { closeSync, openSync } from "node:fs";
import { platform } from "../platform/index.ts";
import { ignoredInStatus } from "../platform/linux/signals.ts";

export type HangupAction = "reload" | "stop" | "ignore";

export interface HangupFacts {
  /** qm had a controlling terminal when it started. */
  hadTerminal: boolean;
  /** It has one now. */
  hasTerminal: boolean;
  /** SIGHUP was ignored when qm started (`nohup`). */
  ignoredAtStart: boolean;
}

export function hangupAction(f: HangupFacts): HangupAction {
  if (!f.hadTerminal || f.hasTerminal) return "reload";
  return f.ignoredAtStart ? "ignore" : "stop";
}

/** Whether this process has a controlling terminal: `/dev/tty` opens only then (ENXIO else). */
export function hasControllingTerminal(): boolean {
  try {
    closeSync(openSync("/dev/tty", "r"));
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether SIGHUP is ignored (the platform's signal mask: Linux `SigIgn` of /proc/self/status,
 * Darwin `ps -o sigignore`; `status`: a recorded Linux one). Read before qm installs its own
 * handler, it tells whether qm was started under `nohup`. False where it cannot be read.
 */
export function hangupIgnored(status?: string): boolean {
  return status === undefined
    ? platform.signalIgnored("SIGHUP")
    : ignoredInStatus(status, "SIGHUP");
}

/** Captures the facts at start; `action()` decides on each SIGHUP. */
export function hangupRule(): { action(): HangupAction } {
  const hadTerminal = hasControllingTerminal();
  const ignoredAtStart = hangupIgnored();
  return {
    action: () =>
      hangupAction({ hadTerminal, hasTerminal: hasControllingTerminal(), ignoredAtStart }),
  };
}
