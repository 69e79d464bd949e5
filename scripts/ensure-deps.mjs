// Runs before `npm start` / `npm test` (under Node, before Bun exists): on a fresh clone, or when
// package-lock.json changed since the last install, install exactly what the lock file pins —
// Bun itself included, from npm. Nothing is downloaded from anywhere else.
//
// A node_modules that is a symbolic link (shared with another checkout of the same lock file) is
// never reinstalled here: `npm ci` empties the directory the link points to, under every other
// checkout that uses it. It is only checked for Bun.
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, statSync } from "node:fs";

const bun = "node_modules/.bin/bun";
const marker = "node_modules/.package-lock.json";
const linked = existsSync("node_modules") && lstatSync("node_modules").isSymbolicLink();
const stale =
  !existsSync(bun) ||
  !existsSync(marker) ||
  statSync("package-lock.json").mtimeMs > statSync(marker).mtimeMs;

if (linked) {
  if (!existsSync(bun)) {
    process.stderr.write("node_modules is a link to an install without Bun: run npm ci there\n");
    process.exit(1);
  }
} else if (stale) {
  process.stderr.write("Installing dependencies (npm ci)…\n");
  const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], { stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
