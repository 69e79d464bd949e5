/**
 * A tiny leveled logger. Lines look like `2026-11-30T03:00:00.000Z INFO  message` and go
 * to stderr (stdout stays free for command output such as `qm status --json`). Tests
 * inject a sink to capture lines instead of parsing stderr.
 *
 * A server must outlive its output: `qm serve | head -1` closes the pipe (EPIPE), a closed
 * terminal fails every write (EIO). `fallbackSink` then goes on in a file, and a `LogFeed`
 * keeps the recent lines for `GET /logs` whatever became of stderr.
 */
import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { RingBuffer } from "./ring-buffer.ts";

export type LogLevel = "debug" | "info" | "warn" | "error";

export interface Logger {
  readonly level: LogLevel;
  /** True when a message at `level` would be written; lets callers skip building it. */
  enabled(level: LogLevel): boolean;
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  /** qm's own recent lines, when the logger keeps them (`qm serve`: `GET /logs`). */
  readonly feed?: LogFeed;
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

/** What `fallbackSink` writes to; process.stderr in production. */
export interface LineStream {
  write(text: string): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
}

export interface FallbackOptions {
  /** Where lines go once the stream fails; null: they are dropped. */
  file: string | null;
  stream?: LineStream;
  append?: (path: string, text: string) => void;
  now?: () => Date;
}

const appendLine = (path: string, text: string): void => {
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, text);
};

/**
 * Lines to `stream` (stderr) until it fails — a write that throws, or the `error` event a
 * closed pipe (EPIPE) or a hung-up terminal (EIO) raises a moment after the write — then to
 * `file`, headed by one line saying why; when the file cannot be written either, lines are
 * dropped. Never throws: losing a log line must never stop the server. The listener also
 * keeps the stream's error from being an uncaught exception, which would end the process.
 * Lines written between the break and its `error` event are lost (the kernel took them).
 */
export interface FallbackSink extends LogSink {
  /** Stops writing to the stream now (qm knows its terminal is gone before a write fails). */
  abandon(reason: string): void;
}

export function fallbackSink(opts: FallbackOptions): FallbackSink {
  const stream = opts.stream ?? process.stderr;
  const append = opts.append ?? appendLine;
  const now = opts.now ?? (() => new Date());
  let broken: string | null = null;
  let announced = false;
  const why = (err: unknown) => (err as { code?: string }).code ?? String(err);
  stream.on("error", (err) => {
    broken ??= why(err);
  });
  const sink = (line: string) => {
    if (broken === null) {
      try {
        stream.write(`${line}\n`);
        return;
      } catch (err) {
        broken = why(err);
      }
    }
    if (opts.file === null) return;
    try {
      if (!announced) {
        announced = true;
        append(
          opts.file,
          `${now().toISOString()} WARN  stderr stopped taking lines (${broken}): the log goes on here\n`,
        );
      }
      append(opts.file, `${line}\n`);
    } catch {
      // Nowhere left to write: the line is dropped.
    }
  };
  return Object.assign(sink, {
    abandon: (reason: string) => {
      broken ??= reason;
    },
  });
}

/**
 * Keeps a closed or broken stdout from ending the process: a write to it raises an `error`
 * event, and one with no listener is an uncaught exception. `qm serve` writes nothing there.
 */
export function ignoreStdoutErrors(stream: LineStream = process.stdout): void {
  stream.on("error", () => {});
}

/** The last lines written, and a way to follow new ones (`GET /logs`, `/logs/stream`). */
export class LogFeed {
  private readonly recent: RingBuffer<string>;
  private readonly followers = new Set<(line: string) => void>();

  constructor(capacity = 500) {
    this.recent = new RingBuffer(capacity);
  }

  /** A sink that keeps each line here and passes it on to `next`. */
  tee(next: LogSink): LogSink {
    return (line) => {
      this.push(line);
      next(line);
    };
  }

  push(line: string): void {
    this.recent.push(line);
    for (const fn of this.followers) {
      try {
        fn(line);
      } catch {
        this.followers.delete(fn);
      }
    }
  }

  /** Oldest first. */
  lines(): string[] {
    return this.recent.toArray();
  }

  /** Calls `fn` with each new line until the returned function is called. */
  follow(fn: (line: string) => void): () => void {
    this.followers.add(fn);
    return () => this.followers.delete(fn);
  }
}

export function createLogger(
  level: LogLevel = "info",
  sink: LogSink = stderrSink,
  now: () => Date = () => new Date(),
  feed?: LogFeed,
): Logger {
  const min = RANK[level];
  const out = feed ? feed.tee(sink) : sink;
  const write = (at: LogLevel, message: string): void => {
    if (RANK[at] < min) return;
    out(`${now().toISOString()} ${LABEL[at]} ${message}`);
  };
  return {
    level,
    ...(feed ? { feed } : {}),
    enabled: (at) => RANK[at] >= min,
    debug: (m) => write("debug", m),
    info: (m) => write("info", m),
    warn: (m) => write("warn", m),
    error: (m) => write("error", m),
  };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = createLogger("error", () => {});
