/**
 * `qm demo-upstream`: the fake model server as a process. Owns everything process-level —
 * flags, the "listening on" line tests read to learn a port-0 address, signals, simulated
 * crashes and exit timers — around the request handling in `server.ts`.
 */
import { writeSync } from "node:fs";
import { DEMO_HELP, type DemoOptions, parseDemoFlags } from "./flags.ts";
import { type DemoServer, startDemoServer } from "./server.ts";
import { holdVram, type VramHold } from "./vram.ts";

/**
 * Runs the demo upstream. Resolves at once after `--help` (exit code 0) or a usage error
 * (message on stderr, `process.exitCode = 2`); otherwise once SIGTERM/SIGINT has shut the
 * server down. Simulated crashes end the process themselves with exit code 1.
 */
export async function runDemoUpstream(argv: string[]): Promise<void> {
  const parsed = parseDemoFlags(argv);
  if (parsed.kind === "help") {
    process.stdout.write(DEMO_HELP);
    return;
  }
  if (parsed.kind === "error") {
    process.stderr.write(`qm demo-upstream: ${parsed.message}\nRun 'qm demo-upstream --help'.\n`);
    process.exitCode = 2;
    return;
  }
  await serve(parsed.options);
}

// Synchronous writes: a crash calls process.exit right after, which would drop async output.
function out(line: string): void {
  writeSync(1, `${line}\n`);
}
function err(line: string): void {
  writeSync(2, `${line}\n`);
}

function die(message: string): never {
  err(message);
  process.exit(1);
}

function serve(options: DemoOptions): Promise<void> {
  const tag = `demo-upstream ${options.name}:`;
  if (options.crashAtStart) {
    die(`${tag} error: failed to load model (simulated by --crash-at-start)`);
  }
  // Real timers: the demo is a separate fake model process; its load delay and exit are the
  // model's own time, not qm's, so they do not go through qm's injected Timers.
  const timers: Timer[] = [];
  let demo: DemoServer | null = null;
  let stopped: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  // `--vram-mb`: held before listening (a model's weights are on the card before it serves),
  // let go of at the end, whichever way the process ends.
  let vram: VramHold | null = null;
  if (options.vramMb !== undefined) {
    try {
      vram = holdVram(options.vramMb, options.vramDevice ?? 0);
    } catch (e) {
      die(`${tag} error: cannot hold ${options.vramMb} MiB of GPU memory: ${(e as Error).message}`);
    }
    const held = vram;
    process.on("exit", () => held.release());
    out(`${tag} holding ${options.vramMb} MiB of GPU memory on device ${held.card} (${held.kind})`);
  }
  const shutdown = (signal: string) => {
    out(`${tag} ${signal}, shutting down`);
    vram?.release();
    for (const t of timers) clearTimeout(t);
    process.off("SIGTERM", onTerm);
    process.off("SIGINT", onInt);
    void (demo?.stop() ?? Promise.resolve()).then(stopped);
  };
  const onTerm = options.ignoreSigterm
    ? () => err(`${tag} ignoring SIGTERM (--ignore-sigterm)`)
    : () => shutdown("SIGTERM");
  const onInt = () => shutdown("SIGINT");
  // Handlers go in before the "listening on" line: a supervisor may signal us as soon as
  // it has read that line or seen /health answer.
  process.on("SIGTERM", onTerm);
  process.on("SIGINT", onInt);

  try {
    demo = startDemoServer(options, { crash: die });
  } catch (e) {
    die(`${tag} error: cannot listen on ${options.host}:${options.port}: ${(e as Error).message}`);
  }
  out(`listening on ${demo.url}`);
  // What a real server would run on: qm places models on cards through this variable.
  const cards = process.env.CUDA_VISIBLE_DEVICES;
  if (cards !== undefined) out(`${tag} CUDA_VISIBLE_DEVICES=${cards}`);
  if (options.loadDelayMs > 0) {
    out(`${tag} loading model (${options.loadDelayMs} ms)`);
    timers.push(setTimeout(() => out(`${tag} model loaded, ready`), options.loadDelayMs));
  } else {
    out(`${tag} model loaded, ready`);
  }
  if (options.exitAfterMs !== null) {
    const ms = options.exitAfterMs;
    timers.push(setTimeout(() => die(`${tag} exiting after ${ms} ms (--exit-after-ms)`), ms));
  }
  return done;
}
