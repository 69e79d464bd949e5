import { resolve } from "node:path";
import type { Subprocess } from "bun";
import { within } from "../../src/shared/timer.ts";

export const ROOT = resolve(import.meta.dir, "../..");
export const QM = resolve(ROOT, "dist/qm");

export interface QmServer {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  url: string;
  /** Everything qm wrote to stderr so far. */
  log(): string;
  /**
   * The log once it holds `pattern`: qm writes a line after the client's answer has gone, so a
   * test that checks the log straight after a response waits for the line to arrive.
   */
  waitLog(pattern: string | RegExp, timeoutMs?: number): Promise<string>;
  /** SIGTERM, then the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number>;
}

/**
 * Runs the compiled `dist/qm serve` on a config file and waits for its first listener.
 * `listen` addresses in the config should use port 0; the real URL is read from the log.
 */
export async function startQm(
  configPath: string,
  env: Record<string, string> = {},
  /** `command`: how to run qm, default `[QM]` (e.g. under an emulator: `["qemu-aarch64", …, bin]`). */
  /** `unset`: variables of this process's environment that qm does not get. */
  opts: { timeoutMs?: number; cwd?: string; command?: string[]; unset?: string[] } = {},
): Promise<QmServer> {
  const merged: Record<string, string | undefined> = { ...process.env, ...env };
  for (const name of opts.unset ?? []) delete merged[name];
  const proc = Bun.spawn([...(opts.command ?? [QM]), "serve", "-c", configPath], {
    cwd: opts.cwd ?? ROOT,
    env: merged,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let text = "";
  const decoder = new TextDecoder();
  const waiters = new Set<() => void>();
  let found: (url: string) => void = () => {};
  const listening = new Promise<string>((r) => {
    found = r;
  });
  void (async () => {
    for await (const chunk of proc.stderr) {
      text += decoder.decode(chunk);
      for (const w of [...waiters]) w();
      const m = /listening on (http:\/\/\S+)/.exec(text);
      if (m) found(m[1]!);
    }
  })();
  void proc.stdout.text();
  const exited = proc.exited.then((code) => {
    throw new Error(`qm exited with ${code} before listening:\n${text}`);
  });
  const started = Promise.race([listening, exited]);
  // A real process's start, on real time; the timer goes once qm listens (`within` clears it),
  // so a script that started qm can end without waiting it out.
  if (!(await within(started, opts.timeoutMs ?? 10_000))) {
    throw new Error(`qm did not start:\n${text}`);
  }
  const url = await started;
  return {
    proc,
    url,
    log: () => text,
    async waitLog(pattern, timeoutMs = 10_000) {
      const holds = () =>
        typeof pattern === "string" ? text.includes(pattern) : pattern.test(text);
      if (holds()) return text;
      let check = () => {};
      const shown = new Promise<void>((resolve) => {
        check = () => {
          if (holds()) resolve();
        };
      });
      waiters.add(check);
      const inTime = await within(shown, timeoutMs);
      waiters.delete(check);
      if (!inTime) throw new Error(`the log never showed ${String(pattern)}:\n${text}`);
      return text;
    },
    async stop(signal = "SIGTERM") {
      proc.kill(signal);
      return proc.exited;
    },
  };
}

/** True while a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
