/** The real box for `qm doctor`: the file system, sockets, the platform and the GPU probe. */
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { which } from "../../config/programs.ts";
import { readModelFile } from "../../gpu/gguf/scan.ts";
import { probeGpu } from "../../gpu/probe.ts";
import { platform } from "../../platform/index.ts";
import { describePortHolder } from "../../process/port-holder.ts";
import { createLogger } from "../../shared/log.ts";
import { StateDb } from "../../store/database.ts";
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

/** Opens the database as `qm serve` does (its bounds are the serve's to keep), then closes it. */
function database(file: string): ReturnType<DoctorDeps["database"]> {
  const opened = StateDb.open(file, {
    bounds: { maxAgeMs: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER },
    log: createLogger("error", () => {}),
  });
  if (!opened.ok) return opened;
  const { db } = opened;
  try {
    const counts = db.counts();
    return { ok: true, bytes: db.bytes(), responses: counts.responses, requests: counts.requests };
  } finally {
    db.close();
  }
}

export const realDeps: DoctorDeps = {
  which,
  bind,
  writable,
  probeGpu: (command) => probeGpu({ command }),
  readModel: readModelFile,
  pidVisible: (pid) => platform.procs.available && platform.procs.entry(pid) !== null,
  platform: () => ({ report: platform.report(), unified: platform.unifiedGpuBudget() }),
  inContainer: () => existsSync("/.dockerenv") || existsSync("/run/.containerenv"),
  database,
  env: process.env,
  fetch: (url, init) => fetch(url, init),
};
