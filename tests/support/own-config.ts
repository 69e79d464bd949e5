/**
 * A config for tests that need their own `[server]` settings (a chosen start port, debug
 * logs) and want to look at qm's state dir. Same `${demo}` macro as e2e.ts.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type ConfigFile, configFile } from "./e2e.ts";

export type OwnConfig = ConfigFile;

/** `body` gets the scratch dir, for paths its commands write to; `server` adds [server] keys. */
export function ownConfig(body: string | ((dir: string) => string), server = ""): OwnConfig {
  return configFile((dir) => {
    const models = typeof body === "string" ? body : body(dir);
    return server ? `[server]\n${server.trim()}\n\n${models}` : models;
  });
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
