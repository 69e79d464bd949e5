import { accessSync, constants } from "node:fs";

/**
 * If qm itself is killed outright (SIGKILL, OOM killer), no JavaScript runs to stop its model
 * processes. On Linux the kernel can do it: a parent-death signal (prctl PR_SET_PDEATHSIG)
 * kills the model the moment qm dies. util-linux's `setpriv --pdeathsig` sets it and then execs
 * the model's command, so the pid and process group stay the model's own. Where `setpriv` is
 * missing, models run as they are and only the exit hooks protect against orphans.
 */
const SETPRIV = process.platform === "linux" ? Bun.which("setpriv") : null;

export function withParentDeathSignal(argv: string[]): string[] {
  return SETPRIV ? [SETPRIV, "--pdeathsig", "KILL", "--", ...argv] : argv;
}

/**
 * The wrapper would turn "no such program" into an exit code; find it first so the error
 * names the command plainly. Returns a message, or null when the program can be run.
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
