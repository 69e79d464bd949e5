/**
 * The short commands a platform reads the system through (Darwin: `ps`, `lsof`, `sysctl`),
 * behind one injectable runner, so each parser is tested on recorded outputs and the
 * platform as a whole on a table of them. They run with `LC_ALL=C` and `TZ=UTC`, so that
 * dates (`ps -o lstart`) and messages read the same on every box.
 */

export interface CommandOutput {
  /** Exit code; null when a signal (the time limit) ended it. */
  code: number | null;
  stdout: string;
}

/** Runs a command to its end; null when it cannot be run at all (not installed). */
export interface CommandRunner {
  sync(argv: readonly string[]): CommandOutput | null;
  async(argv: readonly string[]): Promise<CommandOutput | null>;
}

/** A command that does not answer within this long is killed: its reading is lost. */
const LIMIT_MS = 5000;

function env(): Record<string, string | undefined> {
  return { ...process.env, LC_ALL: "C", TZ: "UTC" };
}

export const realCommands: CommandRunner = {
  sync(argv) {
    try {
      const r = Bun.spawnSync([...argv], {
        env: env(),
        stdin: "ignore",
        stdout: "pipe",
        stderr: "ignore",
        timeout: LIMIT_MS,
      });
      return { code: r.exitCode, stdout: r.stdout.toString() };
    } catch {
      return null; // ENOENT and the like: the program is not there
    }
  },
  async async(argv) {
    let proc: Bun.Subprocess<"ignore", "pipe", "ignore">;
    try {
      proc = Bun.spawn([...argv], {
        env: env(),
        stdin: "ignore",
        stdout: "pipe",
        stderr: "ignore",
        timeout: LIMIT_MS,
      });
    } catch {
      return null;
    }
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    return { code: proc.signalCode === null ? code : null, stdout };
  },
};
