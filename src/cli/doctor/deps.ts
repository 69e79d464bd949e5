/** The real box for `qm doctor`: the file system, sockets, /proc and the GPU probe. */
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { which } from "../../config/programs.ts";
import { readModelFile } from "../../gpu/gguf/scan.ts";
import { probeGpu } from "../../gpu/probe.ts";
import { describePortHolder } from "../../process/port-holder.ts";
import { linuxProc } from "../../process/proc-fs.ts";
import type { BindOutcome, DoctorDeps } from "./check.ts";

/** Binds the address for a moment, as `qm serve` will (no SO_REUSEPORT: Bun.listen sets none). */
function bind(host: string, port: number): BindOutcome {
  try {
    Bun.listen({ hostname: host, port, socket: { data() {} } }).stop(true);
    return { kind: "free" };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === "EADDRINUSE") return { kind: "in use", holder: describePortHolder(port) };
    if (code === "EACCES") return { kind: "denied" };
    if (code === "EADDRNOTAVAIL") return { kind: "no such address" };
    throw err;
  }
}

function writable(dir: string): string | null {
  const probe = join(dir, `.qm-doctor-${process.pid}`);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(probe, "");
    rmSync(probe);
    return null;
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

export const realDeps: DoctorDeps = {
  which,
  bind,
  writable,
  probeGpu: (command) => probeGpu({ command }),
  readModel: readModelFile,
  pidVisible: (pid) => linuxProc.available && linuxProc.entry(pid) !== null,
  inContainer: () => existsSync("/.dockerenv") || existsSync("/run/.containerenv"),
  env: process.env,
  fetch: (url, init) => fetch(url, init),
};
