// Runs before `npm start` / `npm test` (under Node, before Bun exists): on a fresh clone, or when
// package-lock.json changed since the last install, install exactly what the lock file pins —
// Bun itself included, from npm. Nothing is downloaded from anywhere else.
//
// A node_modules that is a symbolic link (shared with another checkout of the same lock file) is
// never reinstalled here: `npm ci` empties the directory the link points to, under every other
// checkout that uses it. It is only checked for Bun.
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const bun = "node_modules/.bin/bun";
const marker = "node_modules/.package-lock.json";
const linked = existsSync("node_modules") && lstatSync("node_modules").isSymbolicLink();
const stale =
  !existsSync(bun) ||
  !existsSync(marker) ||
  statSync("package-lock.json").mtimeMs > statSync(marker).mtimeMs;

/**
 * npm's EBADENGINE warnings, less those about dependencies: Node runs only npm and Bun's installer
 * here, and every dependency runs under Bun, so a dependency's `engines.node` (the OpenAI SDK asks
 * for Node 22) says nothing about this box. Warnings about qm's own engines and Bun's stay.
 */
export function dropDependencyEngineWarnings(text) {
  const out = [];
  let block = [];
  const flush = () => {
    const name = /package: '(@?[^@']+)@/.exec(block.join("\n"))?.[1];
    if (name === undefined || name === "quartermaster" || name === "bun") out.push(...block);
    block = [];
  };
  for (const line of text.split("\n")) {
    if (line.startsWith("npm warn EBADENGINE")) {
      if (line.endsWith("Unsupported engine {")) flush();
      block.push(line);
    } else {
      flush();
      out.push(line);
    }
  }
  flush();
  return out.join("\n");
}

const main = process.argv[1] === fileURLToPath(import.meta.url);
// Run as a script (not imported by its test).
if (main && linked) {
  if (!existsSync(bun)) {
    process.stderr.write("node_modules is a link to an install without Bun: run npm ci there\n");
    process.exit(1);
  }
} else if (main && stale) {
  process.stderr.write("Installing dependencies (npm ci)…\n");
  const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], {
    stdio: ["inherit", "inherit", "pipe"],
    encoding: "utf8",
  });
  process.stderr.write(dropDependencyEngineWarnings(r.stderr ?? ""));
  if (r.status !== 0) process.exit(r.status ?? 1);
}
