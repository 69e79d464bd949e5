// Runs before `npm start` / `npm test` (under Node, before Bun exists): on a fresh clone, or when
// package-lock.json changed since the last install, install exactly what the lock file pins —
// Bun itself included, from npm. Nothing is downloaded from anywhere else.
import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";

const bun = "node_modules/.bin/bun";
const marker = "node_modules/.package-lock.json";
const stale =
  !existsSync(bun) ||
  !existsSync(marker) ||
  statSync("package-lock.json").mtimeMs > statSync(marker).mtimeMs;

if (stale) {
  process.stderr.write("Installing dependencies (npm ci)…\n");
  const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], { stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
