/**
 * Runs a short-lived command (nvidia-smi) with a deadline (on the injected timers) and collects
 * its output. A wedged driver can make nvidia-smi hang for minutes; the probe must not.
 */
import { realTimers, type Timers, within } from "../shared/timer.ts";

export type CommandResult =
  | { ok: true; exitCode: number; stdout: string; stderr: string }
  | { ok: false; kind: "not_found" | "cannot_run" | "timeout"; detail: string };

export async function runCommand(
  argv: string[],
  timeoutMs: number,
  timers: Timers = realTimers,
): Promise<CommandResult> {
  let proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  try {
    proc = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  } catch (err) {
    // Bun.spawn throws synchronously when the executable cannot be started.
    const code = (err as { code?: string }).code;
    const detail = err instanceof Error ? err.message : String(err);
    return { ok: false, kind: code === "ENOENT" ? "not_found" : "cannot_run", detail };
  }
  const collected = Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (!(await within(collected, timeoutMs, timers))) {
    proc.kill("SIGKILL");
    // Don't wait for the pipes: a grandchild could hold them open.
    collected.catch(() => {});
    return { ok: false, kind: "timeout", detail: `no answer within ${timeoutMs} ms` };
  }
  const [stdout, stderr, exitCode] = await collected;
  return { ok: true, exitCode, stdout, stderr };
}
