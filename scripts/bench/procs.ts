/**
 * Every process the benchmark starts, and the guarantee that none outlives it: on success, on
 * an error, on Ctrl-C (SIGINT) or SIGTERM. qm starts each model in its own process group
 * (setsid), so killing qm alone is not enough if qm itself dies hard; the model pids that
 * /api/status reported are remembered and their groups killed too.
 */
import type { Subprocess } from "bun";
import { log } from "./util.ts";

interface Child {
  name: string;
  proc: Subprocess;
}

const children: Child[] = [];
/** Process group ids (= pids of setsid leaders) of model servers qm started. */
const groups = new Set<number>();

export function rememberGroup(pid: number): void {
  groups.add(pid);
}

/**
 * Starts a process and resolves once it printed `listening on http://HOST:PORT` (qm's demo
 * upstream, the stamp upstream and the bare forwarder all do). Its output is copied to `logPath`.
 */
export async function startListening(
  name: string,
  argv: string[],
  logPath: string,
  timeoutMs = 15_000,
): Promise<{ proc: Subprocess; url: string }> {
  const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: Bun.file(logPath) });
  children.push({ name, proc });
  const sink = Bun.file(`${logPath}.out`).writer();
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let seen = "";
  const deadline = setTimeout(() => void reader.cancel(), timeoutMs);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const text = decoder.decode(value, { stream: true });
      sink.write(text);
      seen += text;
      const m = /listening on (http:\/\/\S+)/.exec(seen);
      if (m) {
        // Keep draining stdout so the child never blocks on a full pipe.
        void pump(reader, sink);
        return { proc, url: m[1] as string };
      }
    }
  } finally {
    clearTimeout(deadline);
  }
  throw new Error(`${name} did not print "listening on" (log: ${logPath})`);
}

async function pump(
  reader: { read(): Promise<{ value?: Uint8Array; done: boolean }> },
  sink: ReturnType<ReturnType<typeof Bun.file>["writer"]>,
): Promise<void> {
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || !value) break;
      sink.write(value);
    }
  } catch {
    // the process is gone; nothing more to copy
  }
  await sink.end();
}

/**
 * Starts a process whose readiness the caller checks itself (qm serve). `env`, when given, is
 * added to this process's environment.
 */
export function startPlain(
  name: string,
  argv: string[],
  logPath: string,
  env?: Record<string, string>,
): Subprocess {
  const out = Bun.file(logPath);
  const proc = Bun.spawn(argv, {
    stdin: "ignore",
    stdout: out,
    stderr: out,
    env: env ? { ...process.env, ...env } : undefined,
  });
  children.push({ name, proc });
  return proc;
}

/**
 * Stops one process this benchmark started (SIGTERM; qm stops its models itself) and waits for
 * it, up to `graceMs`, then SIGKILLs it.
 */
export async function stopChild(pid: number, graceMs = 15_000): Promise<void> {
  const c = children.find((x) => x.proc.pid === pid);
  if (!c || c.proc.exitCode !== null || c.proc.signalCode !== null) return;
  c.proc.kill("SIGTERM");
  let timer: Timer | undefined;
  const late = new Promise<void>((r) => {
    timer = setTimeout(r, graceMs);
  });
  await Promise.race([c.proc.exited, late]);
  clearTimeout(timer);
  if (c.proc.exitCode === null && c.proc.signalCode === null) {
    log(`${c.name} did not stop within ${graceMs} ms of SIGTERM; killing it`);
    c.proc.kill("SIGKILL");
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

let cleaning: Promise<void> | null = null;

/** SIGTERM everything (qm stops its models itself), wait a little, then SIGKILL what is left. */
export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill("SIGTERM");
    const deadline = Date.now() + 8000;
    for (const c of children) {
      if (c.proc.exitCode !== null || c.proc.signalCode !== null) continue;
      // A timer that is cleared once the process is gone: it must not keep the run alive.
      let timer: Timer | undefined;
      const late = new Promise<void>((r) => {
        timer = setTimeout(r, Math.max(0, deadline - Date.now()));
      });
      await Promise.race([c.proc.exited, late]);
      clearTimeout(timer);
    }
    killSync();
  })();
  return cleaning;
}

/** Last resort, synchronous so it also works from an `exit` handler. */
function killSync(): void {
  for (const c of children) {
    if (c.proc.exitCode === null && c.proc.signalCode === null) {
      log(`${c.name} did not stop after SIGTERM; killing it`);
      c.proc.kill("SIGKILL");
    }
  }
  for (const pgid of groups) {
    if (!alive(pgid)) continue;
    log(`model process group ${pgid} outlived qm; killing it`);
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/**
 * Runs `main`, cleaning up however it ends (then `after`, e.g. removing the temp dir); exits
 * 130/143 on SIGINT/SIGTERM, sets exit code 1 on error.
 */
export async function withCleanup(main: () => Promise<void>, after: () => void): Promise<void> {
  const onSignal = (signal: "SIGINT" | "SIGTERM") => {
    log(`${signal}: stopping everything`);
    void cleanup().then(() => {
      after();
      process.exit(signal === "SIGINT" ? 130 : 143);
    });
  };
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("exit", killSync);
  try {
    await main();
  } catch (err) {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exitCode = 1;
  } finally {
    await cleanup();
    after();
  }
}
