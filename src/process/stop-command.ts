/**
 * `cmd_stop`: a user command that stops a model (e.g. `docker stop …`, or a server's own
 * shutdown endpoint via curl). `${PID}` is the only macro left for run time; the rest were
 * expanded by the config loader. Like `cmd`, it is split shell-style and run without a
 * shell.
 */
import { splitCommand } from "../config/argv.ts";
import { type Timers, within } from "../shared/timer.ts";
import { pumpLines } from "./line-splitter.ts";
import { signalGroup, trackGroup, untrackGroup } from "./process-group.ts";
import { tree } from "./tree-watch.ts";

/** How long to wait for the last output of a process that has exited. */
export const STDIO_DRAIN_MS = 250;

export interface StopCommand {
  /** Resolves true when the command exited 0. */
  readonly done: Promise<boolean>;
  /** SIGKILLs the command (it hung past the model's stop timeout). */
  kill(): void;
}

/** Starts `cmdStop` for `pid`, or returns why it cannot run. */
export function runStopCommand(
  cmdStop: string,
  pid: number,
  env: Record<string, string>,
  onLine: (line: string) => void,
  timers: Timers,
): StopCommand | { error: string } {
  let argv: string[];
  try {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: qm's ${PID} macro, not JS.
    argv = splitCommand(cmdStop.replaceAll("${PID}", String(pid)));
  } catch (err) {
    return { error: `cannot parse cmd_stop: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (argv.length === 0) return { error: "cmd_stop is empty" };
  let proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  try {
    proc = Bun.spawn(argv, {
      env: { ...process.env, ...env },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      detached: true,
    });
  } catch (err) {
    return { error: `cannot run cmd_stop: ${err instanceof Error ? err.message : String(err)}` };
  }
  const pgid = proc.pid;
  trackGroup(pgid);
  tree.noteSession(pgid); // its orphans' zombies are reparented to qm: reap them
  const pumps = Promise.all([pumpLines(proc.stdout, onLine), pumpLines(proc.stderr, onLine)]);
  const done = proc.exited.then(async (code) => {
    untrackGroup(pgid);
    signalGroup(pgid, "SIGKILL");
    // Bounded: a grandchild that left the group could hold the pipes open forever.
    await within(pumps, STDIO_DRAIN_MS, timers);
    return code === 0;
  });
  return { done, kill: () => signalGroup(pgid, "SIGKILL") };
}
