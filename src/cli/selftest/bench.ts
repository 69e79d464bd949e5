/**
 * One qm for a self-test scenario: a runtime built from a generated config (the real loader,
 * scheduler, supervisor and GPU watch; no listener), whose models are demo upstreams holding
 * memory (`qm demo-upstream --vram-mb`), and whose GPU readings are taken when the scenario
 * says (`read()`), not on a timer. Plus "other programs": demo upstreams qm did not start.
 */
import { join } from "node:path";
import { splitCommand } from "../../config/argv.ts";
import { loadConfigText } from "../../config/index.ts";
import { SIM_DIR_ENV } from "../../demo/vram.ts";
import type { GpuReading } from "../../gpu/index.ts";
import { Runtime } from "../../runtime/runtime.ts";
import { systemClock } from "../../shared/clock.ts";
import { createLogger } from "../../shared/log.ts";

export interface BenchMode {
  /** Real GPU memory (`qm selftest gpu`), or simulated by `qm demo-smi`. */
  real: boolean;
  /** How to run qm itself (`${QM_BIN}`): the binary, or bun and the entry file. */
  qm: string;
  /** A scratch folder for this run. */
  dir: string;
}

/** Where simulated demo models write what they hold. */
export const simDir = (mode: BenchMode) => join(mode.dir, "vram");

export class Bench {
  readonly lines: string[] = [];
  readonly runtime: Runtime;

  constructor(
    readonly mode: BenchMode,
    toml: string,
  ) {
    const config = loadConfigText(toml, {
      file: join(mode.dir, "selftest.toml"),
      env: process.env,
      qmBin: mode.qm,
    });
    this.runtime = new Runtime(config, {
      clock: systemClock,
      log: createLogger("info", (line) => this.lines.push(line)),
    });
  }

  /** Loads `id` (evicting what the policy says) and returns once it is ready. */
  async load(id: string): Promise<void> {
    const model = this.runtime.config.models[id];
    if (!model) throw new Error(`no model ${id}`);
    const lease = await this.runtime.acquire(model, new AbortController().signal, { holdMs: 0 });
    lease.release();
  }

  unload(id: string): void {
    this.runtime.unload(id, { force: true });
  }

  state(id: string): string {
    return this.runtime.modelState(id);
  }

  /** The ids of the ready models, sorted. */
  ready(): string[] {
    return this.runtime
      .status()
      .models.filter((m) => m.state === "ready")
      .map((m) => m.id)
      .sort();
  }

  /** One GPU reading now; the watch applies it (ceiling, shedding) as its loop would. */
  async read(): Promise<GpuReading | null> {
    await this.runtime.gpu.sample();
    return this.runtime.gpu.last;
  }

  ceiling(): number {
    return this.runtime.budget.vramGb();
  }

  /** Reads every `everyMs` until `done` holds (true) or `ms` passed (false). */
  async until(done: () => boolean, ms: number, everyMs = 250): Promise<boolean> {
    const end = performance.now() + ms;
    for (;;) {
      await this.read();
      if (done()) return true;
      if (performance.now() >= end) return false;
      await Bun.sleep(everyMs);
    }
  }

  async close(): Promise<void> {
    this.runtime.beginShutdown();
    await this.runtime.stopAll();
  }
}

/** The `[models.ID]` of a demo model holding `mib`, with its estimate and extra lines. */
export function demoModel(
  mode: BenchMode,
  id: string,
  mib: number,
  est: number,
  extra = "",
): string {
  const env = mode.real ? "" : `env = { ${SIM_DIR_ENV} = ${JSON.stringify(simDir(mode))} }\n`;
  return (
    `[models.${id}]\n` +
    `cmd = "\${QM_BIN} demo-upstream --port \${PORT} --name \${MODEL_ID} --vram-mb ${mib} --tokens 2 --token-ms 0"\n` +
    `est_vram_gb = ${Math.round(est * 1000) / 1000}\n${env}${extra}\n`
  );
}

/** Another program holding `mib` of GPU memory (a demo upstream qm did not start). */
export class Holder {
  private constructor(private readonly proc: Bun.Subprocess<"ignore", "pipe", "pipe">) {}

  static async start(mode: BenchMode, mib: number): Promise<Holder> {
    const env = mode.real ? process.env : { ...process.env, [SIM_DIR_ENV]: simDir(mode) };
    const proc = Bun.spawn(
      [
        ...splitCommand(mode.qm),
        "demo-upstream",
        "--port",
        "0",
        "--name",
        "other",
        "--vram-mb",
        String(mib),
      ],
      { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
    );
    const holder = new Holder(proc);
    if (live.size === 0) process.once("exit", Holder.killAll);
    live.add(holder);
    // Held once it says it listens (the memory is taken before that line).
    const reader = proc.stdout.getReader();
    let text = "";
    while (!text.includes("listening on")) {
      const { value, done } = await reader.read();
      if (done) {
        const err = await new Response(proc.stderr).text();
        live.delete(holder);
        throw new Error(`another program could not hold ${mib} MiB: ${err.trim() || "it exited"}`);
      }
      text += new TextDecoder().decode(value);
    }
    // Keep reading: a closed pipe would end it at its next line (EPIPE).
    void (async () => {
      while (!(await reader.read().catch(() => ({ done: true }))).done) {}
    })();
    return holder;
  }

  /** Ends it and waits for its exit (its memory is the driver's to reclaim then). */
  async stop(): Promise<void> {
    this.proc.kill("SIGKILL");
    await this.proc.exited;
    live.delete(this);
  }

  static killAll(): void {
    for (const h of live) h.proc.kill("SIGKILL");
    live.clear();
  }
}

const live = new Set<Holder>();
