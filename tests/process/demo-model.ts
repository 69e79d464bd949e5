/**
 * Helpers for tests that run the real demo upstream as a child process. Ports are reserved
 * by binding port 0 and releasing it (never a fixed port).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ModelConfig } from "../../src/config/types.ts";
import { createLogger, type Logger } from "../../src/shared/log.ts";

export const DEMO_CLI = join(import.meta.dir, "../../src/demo/cli.ts");

/** argv that runs the demo upstream with this Bun. */
export function demoArgv(...flags: string[]): string[] {
  return [process.execPath, DEMO_CLI, ...flags];
}

export function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = probe;
  probe.stop(true);
  return port;
}

/**
 * A ModelConfig for the demo upstream on a reserved port. Built by hand: these tests are
 * about the supervisor, and a `ModelConfig` is its whole input.
 */
export function demoModel(
  id: string,
  flags: string[] = [],
  over: Partial<ModelConfig> = {},
): ModelConfig {
  const port = freePort();
  const argv =
    over.argv ?? demoArgv("--port", String(port), "--name", id, "--token-ms", "0", ...flags);
  return {
    id,
    cmd: argv.join(" "),
    argv,
    proxy: `http://127.0.0.1:${port}`,
    port,
    checkEndpoint: "/health",
    cmdStop: "",
    aliases: [],
    env: {},
    ttlS: 0,
    concurrencyLimit: 0,
    estVramGb: 0,
    estRamGb: 0,
    sendLoadingState: true,
    unlisted: false,
    useModelName: "",
    anthropicNative: false,
    stopTimeoutS: 5,
    firstByteTimeoutMs: 0,
    stallTimeoutMs: 0,
    group: "(default)",
    template: {
      cmd: argv.join(" "),
      proxy: `http://127.0.0.1:${port}`,
      checkEndpoint: "/health",
      cmdStop: "",
      useModelName: "",
      env: {},
    },
    ...over,
  };
}

/**
 * A debug-level logger whose lines land in `lines`, with the time each was written.
 * `waitFor(text)` resolves with that time once a line containing `text` is logged.
 */
export function captureLogger(): {
  log: Logger;
  lines: string[];
  waitFor(text: string): Promise<number>;
} {
  const lines: string[] = [];
  const times: number[] = [];
  const waiters: { text: string; resolve: (t: number) => void }[] = [];
  const log = createLogger("debug", (line) => {
    const now = performance.now();
    lines.push(line);
    times.push(now);
    for (const w of waiters.filter((w) => line.includes(w.text))) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(now);
    }
  });
  const waitFor = (text: string) => {
    const i = lines.findIndex((l) => l.includes(text));
    if (i >= 0) return Promise.resolve(times[i] as number);
    return new Promise<number>((resolve) => waiters.push({ text, resolve }));
  };
  return { log, lines, waitFor };
}

/**
 * kill(pid, 0), but a zombie counts as dead: an orphan that was killed waits for init to
 * reap it, and some container inits take their time.
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/PID/stat: "pid (comm) S ..."; comm may contain ") ", so look after the last one.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat[stat.lastIndexOf(")") + 2] !== "Z";
  } catch {
    return true; // no procfs (macOS): trust kill(2)
  }
}

/** A promise with its resolve function, for awaiting callbacks. */
export function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
