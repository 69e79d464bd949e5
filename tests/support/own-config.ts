/**
 * A config for tests that need their own `[server]` settings (a chosen start port, debug
 * logs) and want to look at qm's state dir. Same `${demo}` macro as e2e.ts.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface OwnConfig {
  path: string;
  /** A scratch dir for the test (scripts, pid files). */
  dir: string;
  stateDir: string;
}

/** `body` gets the scratch dir, for paths its commands write to. */
export function ownConfig(body: string | ((dir: string) => string), server = ""): OwnConfig {
  const dir = mkdtempSync(join(tmpdir(), "qm-sup-"));
  const models = typeof body === "string" ? body : body(dir);
  const stateDir = join(dir, "state");
  const path = join(dir, "quartermaster.toml");
  const start = /start_port/.test(server)
    ? ""
    : `start_port = ${20000 + Math.floor(Math.random() * 30000)}\n`;
  writeFileSync(
    path,
    `[server]\nlisten = ["127.0.0.1:0"]\n${start}shutdown_timeout_s = 3\n` +
      `state_dir = "${stateDir}"\n${server}\n` +
      `[macros]\ndemo = "\${QM_BIN} demo-upstream --port \${PORT} --name \${MODEL_ID}"\n\n${models}`,
  );
  return { path, dir, stateDir };
}

export interface RunFileJson {
  qm: { pid: number; start: number };
  models: {
    model: string;
    port: number | null;
    leader: { pid: number; start: number };
    descendants: { pid: number; start: number }[];
  }[];
}

/** The run files in a state dir, by qm pid. */
export function runFiles(stateDir: string): Map<number, RunFileJson> {
  const out = new Map<number, RunFileJson>();
  let names: string[] = [];
  try {
    names = readdirSync(join(stateDir, "run"));
  } catch {}
  for (const name of names.filter((n) => n.endsWith(".json"))) {
    out.set(
      Number.parseInt(name, 10),
      JSON.parse(readFileSync(join(stateDir, "run", name), "utf8")) as RunFileJson,
    );
  }
  return out;
}

/** Running, i.e. there and not a zombie (a killed orphan may wait for init to reap it). */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !"ZX".includes(stat[stat.lastIndexOf(")") + 2]!);
  } catch {
    return false;
  }
}

/** Whether /proc/PID exists at all (a zombie counts: it is not reaped yet). */
export function exists(pid: number): boolean {
  try {
    readFileSync(`/proc/${pid}/stat`, "utf8");
    return true;
  } catch {
    return false;
  }
}

/** Fields of /proc/PID/stat after the command name: [state, ppid, pgrp, session, …]. */
export function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** Reads a pid a model's script wrote to a file, once it is there. */
export function pidFrom(path: string): number | null {
  try {
    const n = Number.parseInt(readFileSync(path, "utf8"), 10);
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}
