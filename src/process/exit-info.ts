/** How a model process ended, and the one place that words it for people. */
import { QmError } from "../shared/errors.ts";

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

/** The stderr tail as an indented block for qm's log. */
export function formatTail(lines: readonly string[]): string {
  if (lines.length === 0) return "(it wrote nothing to stderr)";
  return `last stderr lines:\n${lines.map((l) => `  | ${l}`).join("\n")}`;
}

export interface ExitReport {
  /**
   * What clients (and `/api/status`) are told: the model, how it ended and where its output
   * is, e.g. `model "qwen" exited while loading (exit code 1): error: unknown model file; its
   * output is at /api/models/qwen/logs`.
   */
  message: string;
  /** qm's log line: the same headline with the stderr tail. */
  log: string;
}

/**
 * The report of an exit nobody asked for. Only while loading does one line of the model's
 * output reach a client (its last stderr line, which then reads like the reason: a bad flag, a
 * missing file); once it served, its output can carry prompts, so clients get none of it.
 */
export function exitReport(modelId: string, exit: ProcessExit): ExitReport {
  const loading = exit.phase === "starting";
  const headline = `model "${modelId}" exited ${loading ? "while loading" : "unexpectedly"} (${describeStatus(exit)})`;
  const cause = loading ? lastWords(exit.stderrTail) : "";
  return {
    message: `${headline}${cause}; its output is at /api/models/${modelId}/logs`,
    log: `${headline}; ${formatTail(exit.stderrTail)}`,
  };
}

/**
 * The error for such an exit: `upstream_start_failed` while loading (the waiters of the start
 * get it), `upstream_crashed` after. `detail` (the tail, and the command when given) is for
 * qm's log; `exit` carries the facts for API layers.
 */
export function exitError(modelId: string, exit: ProcessExit, command?: string): QmError {
  const { message } = exitReport(modelId, exit);
  const tail = formatTail(exit.stderrTail);
  return new QmError(
    exit.phase === "starting" ? "upstream_start_failed" : "upstream_crashed",
    message,
    {
      detail: command === undefined ? tail : `${tail}\ncommand: ${command}`,
      exit: {
        model: modelId,
        code: exit.code,
        signal: exit.signal,
        stderrTail: [...exit.stderrTail],
      },
    },
  );
}

/** The last stderr line as `: line`, cut to one short line; "" when there is none. */
function lastWords(tail: readonly string[]): string {
  const line = tail.at(-1)?.trim();
  if (!line) return "";
  return `: ${line.length > 160 ? `${line.slice(0, 157)}...` : line}`;
}

/** A start that a stop overtook before the model became ready. */
export function stoppedWhileStarting(id: string): QmError {
  return new QmError(
    "cancelled",
    `loading model "${id}" was cancelled: it was stopped before it became ready`,
  );
}
