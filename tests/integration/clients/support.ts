/** qm on the shipped quartermaster.toml, for the real clients' tests (tests/integration/clients/). */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../../support/qm-process.ts";

/**
 * The shipped config as a user runs it, moved off its fixed ports: listening on port 0, its
 * `${PORT}`s from a random base, its state in a scratch dir (`dir`, also the clients' home).
 * Returns the copy's path, for `startQm`.
 */
export function shippedConfig(): { path: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), "qm-clients-"));
  const shipped = readFileSync(join(ROOT, "quartermaster.toml"), "utf8");
  const listen = /^listen = \[.*\].*$/m;
  const startPort = /^start_port = \d+.*$/m;
  if (!listen.test(shipped) || !startPort.test(shipped)) {
    throw new Error("quartermaster.toml: [server] listen or start_port not found");
  }
  const text = shipped
    .replace(listen, `listen = ["127.0.0.1:0"]\nstate_dir = "${join(dir, "state")}"`)
    .replace(startPort, `start_port = ${20000 + Math.floor(Math.random() * 30000)}`);
  const path = join(dir, "quartermaster.toml");
  writeFileSync(path, text);
  return { path, dir };
}
