/** How a model process ended, and the words qm uses to tell people about it. */

export interface ProcessExit {
  /** Exit code, or null when a signal ended it. */
  code: number | null;
  /** Signal name (e.g. "SIGKILL"), or null when it exited by itself. */
  signal: string | null;
  /** Its last stderr lines, oldest first. */
  stderrTail: string[];
  /** What the supervisor was doing when it exited: a crash while loading or serving. */
  phase: "starting" | "ready" | "stopping";
}

/** "exit code 1" / "signal SIGKILL". */
export function describeStatus(exit: Pick<ProcessExit, "code" | "signal">): string {
  if (exit.signal !== null) return `signal ${exit.signal}`;
  return exit.code === null ? "unknown status" : `exit code ${exit.code}`;
}

/** The stderr tail as an indented block for an error message. */
export function formatTail(lines: readonly string[]): string {
  if (lines.length === 0) return "(it wrote nothing to stderr)";
  return `last stderr lines:\n${lines.map((l) => `  | ${l}`).join("\n")}`;
}

/**
 * The message for an exit nobody asked for, e.g.
 * `model "qwen" exited while loading (exit code 1); last stderr lines: …`.
 * The runtime uses it for the error every waiting and in-flight request receives.
 */
export function describeExit(modelId: string, exit: ProcessExit): string {
  const when = exit.phase === "starting" ? "while loading" : "unexpectedly";
  return `model "${modelId}" exited ${when} (${describeStatus(exit)}); ${formatTail(exit.stderrTail)}`;
}
