// Runs before `npm start` / `npm test` (under Node, before Bun exists): on a fresh clone, or when
// package-lock.json changed since the last install, install exactly what the lock file pins —
// Bun itself included, from npm. Nothing is downloaded from anywhere else.
import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const bun = "node_modules/.bin/bun";
const marker = "node_modules/.package-lock.json";
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

// Run as a script (not imported by its test).
if (process.argv[1] === fileURLToPath(import.meta.url) && stale) {
  process.stderr.write("Installing dependencies (npm ci)…\n");
  const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], {
    stdio: ["inherit", "inherit", "pipe"],
    encoding: "utf8",
  });
  process.stderr.write(dropDependencyEngineWarnings(r.stderr ?? ""));
  if (r.status !== 0) process.exit(r.status ?? 1);
}
