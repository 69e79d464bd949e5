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
import { closeSync, openSync, readFileSync } from "node:fs";

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
 * Whether SIGHUP is ignored, from `SigIgn` of /proc/self/status (a hex mask, bit N−1 for
 * signal N; SIGHUP is 1). Read before qm installs its own handler, it tells whether qm was
 * started under `nohup`. False where /proc is missing.
 */
export function hangupIgnored(status?: string): boolean {
  let text = status;
  if (text === undefined) {
    try {
      text = readFileSync("/proc/self/status", "utf8");
    } catch {
      return false;
    }
  }
  const mask = /^SigIgn:\s*([0-9a-fA-F]+)$/m.exec(text)?.[1];
  return mask !== undefined && (Number.parseInt(mask.slice(-1), 16) & 1) === 1;
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
