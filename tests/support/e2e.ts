import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StatusJson } from "../../src/api/status-json.ts";
import { type QmServer, startQm } from "./qm-process.ts";

export interface ConfigFile {
  path: string;
  /** A scratch dir for the test (scripts, pid files). */
  dir: string;
  stateDir: string;
}

/**
 * Writes a config whose models run the demo upstream inside the compiled binary
 * (`${QM_BIN} demo-upstream`), listening on port 0 (one line per `listeners`). A `[server]`
 * table in `body` adds its keys to the generated one (TOML allows one table) and replaces
 * the defaults it names. `body` may be a function of the scratch dir, for paths commands use.
 */
export function configFile(body: string | ((dir: string) => string), listeners = 1): ConfigFile {
  const dir = mkdtempSync(join(tmpdir(), "qm-e2e-"));
  const path = join(dir, "quartermaster.toml");
  const stateDir = join(dir, "state");
  const text = typeof body === "string" ? body : body(dir);
  const own = /^\[server\]\n((?:(?!\[).*\n)*)/m.exec(text);
  const extra = own?.[1] ?? "";
  const rest = own ? text.replace(own[0], "") : text;
  const unless = (key: string, line: string) =>
    new RegExp(`^${key}\\s*=`, "m").test(extra) ? "" : `${line}\n`;
  const listen = Array.from({ length: listeners }, () => `"127.0.0.1:0"`).join(", ");
  writeFileSync(
    path,
    `[server]\nlisten = [${listen}]\n` +
      // A random base far from other tests' ports; the loader skips any port in use anyway.
      unless("start_port", `start_port = ${20000 + Math.floor(Math.random() * 30000)}`) +
      unless("shutdown_timeout_s", "shutdown_timeout_s = 3") +
      // Run files of this qm stay with this test, away from the user's state dir.
      unless("state_dir", `state_dir = "${stateDir}"`) +
      extra +
      `\n[macros]\ndemo = "\${QM_BIN} demo-upstream --port \${PORT} --name \${MODEL_ID}"\n\n${rest}`,
  );
  return { path, dir, stateDir };
}

export function writeConfig(body: string, listeners = 1): string {
  return configFile(body, listeners).path;
}

/** Starts qm and returns once every one of its `listeners` has logged its address. */
export async function serve(body: string, listeners = 1): Promise<QmServer> {
  const qm = await startQm(writeConfig(body, listeners));
  // The first address is what startQm waits for; the rest may still be on their way.
  await until(
    async () => listenerUrls(qm).length,
    (n) => n >= listeners,
    5000,
  );
  return qm;
}

/** All listener URLs from qm's log (one per `listening on` line). */
export function listenerUrls(qm: QmServer): string[] {
  return [...qm.log().matchAll(/listening on (http:\/\/\S+)/g)].map((m) => m[1]!);
}

export function chat(
  url: string,
  model: string,
  extra: Record<string, unknown> = {},
  headers = {},
) {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], ...extra }),
  });
}

/** A POST with an optional JSON body. */
export function postJson(url: string, path: string, body?: unknown) {
  return fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export async function status(url: string): Promise<StatusJson> {
  const res = await fetch(`${url}/api/status`);
  return (await res.json()) as StatusJson;
}

/** Polls `/api/status` until `pred` holds (integration tests wait on real processes). */
export async function until<T>(
  probe: () => Promise<T>,
  pred: (v: T) => boolean,
  timeoutMs = 8000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (pred(v)) return v;
    if (Date.now() > deadline)
      throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await Bun.sleep(25);
  }
}
