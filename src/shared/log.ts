/**
 * A tiny leveled logger. Lines look like `2026-11-30T03:00:00.000Z INFO  message` and go
 * to stderr (stdout stays free for command output such as `qm status --json`). Tests
 * inject a sink to capture lines instead of parsing stderr.
 */
export type LogLevel = "debug" | "info" | "warn" | "error";

export interface Logger {
  readonly level: LogLevel;
  /** True when a message at `level` would be written; lets callers skip building it. */
  enabled(level: LogLevel): boolean;
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Receives one finished line, without the trailing newline. */
export type LogSink = (line: string) => void;

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
// Padded to the width of the longest label so messages line up in a terminal.
const LABEL: Record<LogLevel, string> = {
  debug: "DEBUG",
  info: "INFO ",
  warn: "WARN ",
  error: "ERROR",
};

export const stderrSink: LogSink = (line) => {
  process.stderr.write(`${line}\n`);
};

export function createLogger(
  level: LogLevel = "info",
  sink: LogSink = stderrSink,
  now: () => Date = () => new Date(),
): Logger {
  const min = RANK[level];
  const write = (at: LogLevel, message: string): void => {
    if (RANK[at] < min) return;
    sink(`${now().toISOString()} ${LABEL[at]} ${message}`);
  };
  return {
    level,
    enabled: (at) => RANK[at] >= min,
    debug: (m) => write("debug", m),
    info: (m) => write("info", m),
    warn: (m) => write("warn", m),
    error: (m) => write("error", m),
  };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = createLogger("error", () => {});
