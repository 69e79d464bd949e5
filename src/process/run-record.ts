/**
 * What survives a crash of qm itself. A SIGKILLed qm runs no code, and its models'
 * descendants that left their process group outlive it (the death watch ends the groups). So a
 * running qm keeps `<state_dir>/run/<qm pid>.json`: its own pid and start time and, per
 * model, the leader and descendants as (pid, start time) and the port. The next `qm serve`
 * kills what a dead qm's file lists, if the start times still match (a pid may have been
 * reused since), plus any process whose environment still carries the dead qm's QM_OWNER
 * mark, logs what it reaped and deletes the file. A live qm's file is left alone.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ProcEntry, ProcFs } from "../platform/types.ts";
import type { Logger } from "../shared/log.ts";
import type { ProcId, WatchedRun } from "./tree-watch.ts";

export interface RunFile {
  qm: ProcId;
  models: WatchedRun[];
}

export function runDir(stateDir: string): string {
  return join(stateDir, "run");
}

/** Keeps this qm's run file current; `close()` removes it (a clean shutdown). */
export class RunRecord {
  private last = "";
  private warned = false;
  readonly path: string;

  constructor(
    stateDir: string,
    private readonly self: ProcId,
    private readonly log: Logger,
  ) {
    this.path = join(runDir(stateDir), `${self.pid}.json`);
  }

  /** Writes aside, then renames: a reader never sees half a file. */
  write(models: WatchedRun[]): void {
    const body: RunFile = { qm: this.self, models };
    const text = `${JSON.stringify(body, null, 1)}\n`;
    if (text === this.last) return;
    try {
      mkdirSync(join(this.path, ".."), { recursive: true });
      const aside = `${this.path}.tmp`;
      writeFileSync(aside, text);
      renameSync(aside, this.path);
      this.last = text;
    } catch (err) {
      if (this.warned) return;
      this.warned = true;
      this.log.warn(
        `cannot write ${this.path} (${err instanceof Error ? err.message : String(err)}): ` +
          "after a crash of qm, the next qm will not know which processes it left",
      );
    }
  }

  close(): void {
    rmSync(this.path, { force: true });
  }
}

export interface ReapDeps {
  fs: ProcFs;
  self: ProcId;
  kill(pid: number, signal: NodeJS.Signals): void;
  log: Logger;
}

export interface Reaped {
  model: string;
  pid: number;
  comm: string;
  port: number | null;
}

const same = (e: ProcEntry | null, id: ProcId) =>
  e !== null && e.start === id.start && e.state !== "Z" && e.state !== "X";

/** Kills what dead qm's left behind (see the file comment); returns what it killed. */
export function reapStale(stateDir: string, deps: ReapDeps): Reaped[] {
  const dir = runDir(stateDir);
  let all: string[];
  try {
    all = readdirSync(dir);
  } catch {
    return []; // no run dir yet
  }
  // A write cut short by the crash: the last complete file was renamed into place before.
  for (const name of all.filter((n) => /^\d+\.json\.tmp$/.test(n))) {
    if (deps.fs.entry(Number.parseInt(name, 10)) === null) rmSync(join(dir, name), { force: true });
  }
  const names = all.filter((n) => /^\d+\.json$/.test(n));
  const reaped: Reaped[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const file = readRunFile(path);
    if (file === null) {
      deps.log.warn(`ignoring ${path}: not a qm run file; removing it`);
      rmSync(path, { force: true });
      continue;
    }
    const { qm } = file;
    if (qm.pid === deps.self.pid && qm.start === deps.self.start) continue;
    if (same(deps.fs.entry(qm.pid), qm)) continue; // that qm still runs: its processes are its own
    reaped.push(...reapFile(file, deps));
    rmSync(path, { force: true });
  }
  return reaped;
}

function reapFile(file: RunFile, deps: ReapDeps): Reaped[] {
  const out: Reaped[] = [];
  const done = new Set<number>();
  const kill = (model: string, port: number | null, e: ProcEntry) => {
    if (done.has(e.pid)) return;
    done.add(e.pid);
    try {
      deps.kill(e.pid, "SIGKILL");
    } catch (err) {
      deps.log.warn(`cannot kill pid ${e.pid} (${e.comm}) left by qm ${file.qm.pid}: ${err}`);
      return;
    }
    out.push({ model, pid: e.pid, comm: e.comm, port });
    const on = port === null ? "" : ` (port ${port})`;
    deps.log.warn(
      `reaped pid ${e.pid} (${e.comm}) of model "${model}"${on}, left running by qm pid ${file.qm.pid}, which is gone`,
    );
  };
  for (const run of file.models) {
    for (const id of [run.leader, ...run.descendants]) {
      const e = deps.fs.entry(id.pid);
      if (e && same(e, id)) kill(run.model, run.port, e);
      else if (e && e.start !== id.start) {
        deps.log.debug(`pid ${id.pid} of model "${run.model}" is another process now; left alone`);
      }
    }
  }
  // Started after that qm's last scan: recognised by the mark in its environment.
  const owner = `QM_OWNER=${file.qm.pid}:${file.qm.start}`;
  for (const e of deps.fs.list()) {
    if (done.has(e.pid) || e.state === "Z" || e.state === "X") continue;
    const env = deps.fs.environ(e.pid);
    if (!env?.includes(owner)) continue;
    const model = env.find((v) => v.startsWith("QM_MODEL="))?.slice("QM_MODEL=".length);
    const port = file.models.find((m) => m.model === model)?.port ?? null;
    kill(model ?? "?", port, e);
  }
  return out;
}

function readRunFile(path: string): RunFile | null {
  try {
    const v = JSON.parse(readFileSync(path, "utf8")) as RunFile;
    const isId = (x: unknown) =>
      typeof x === "object" &&
      x !== null &&
      Number.isInteger((x as ProcId).pid) &&
      Number.isInteger((x as ProcId).start);
    if (!isId(v.qm) || !Array.isArray(v.models)) return null;
    const ok = v.models.every(
      (m) => typeof m.model === "string" && isId(m.leader) && m.descendants.every(isId),
    );
    return ok ? v : null;
  } catch {
    return null;
  }
}
