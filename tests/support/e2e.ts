import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, type QmServer, startQm } from "./qm-process.ts";

/**
 * Writes a config whose models run the demo upstream inside the compiled binary
 * (`${QM_BIN} demo-upstream`), listening on port 0 (one line per `listeners`).
 */
export function writeConfig(body: string, listeners = 1): string {
  const dir = mkdtempSync(join(tmpdir(), "qm-e2e-"));
  const path = join(dir, "quartermaster.toml");
  const listen = Array.from({ length: listeners }, () => `"127.0.0.1:0"`).join(", ");
  // A random base far from other tests' ports; the loader skips any port in use anyway.
  const start = 20000 + Math.floor(Math.random() * 30000);
  // A `[server]` table in `body` adds its keys to the generated one (TOML allows one table).
  const own = /^\[server\]\n((?:(?!\[).*\n)*)/m.exec(body);
  const extra = own?.[1] ?? "";
  const rest = own ? body.replace(own[0], "") : body;
  writeFileSync(
    path,
    `[server]\nlisten = [${listen}]\nstart_port = ${start}\n` +
      (/^shutdown_timeout_s\s*=/m.test(extra) ? "" : "shutdown_timeout_s = 3\n") +
      extra +
      // Run files of this qm stay with this test, away from the user's state dir.
      (/^state_dir\s*=/m.test(extra) ? "" : `state_dir = "${join(dir, "state")}"\n`) +
      `\n[macros]\ndemo = "\${QM_BIN} demo-upstream --port \${PORT} --name \${MODEL_ID}"\n\n${rest}`,
  );
  return path;
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

export async function status(url: string) {
  const res = await fetch(`${url}/api/status`);
  return (await res.json()) as {
    models: {
      id: string;
      state: string;
      inflight: number;
      leases: number;
      queued: number;
      pid: number | null;
      held_until_ms: number | null;
      est_vram_gb: number;
    }[];
    resources: {
      vram_budget_gb: number;
      vram_ceiling_gb: number;
      vram_used_gb: number;
      probe: string;
      gpu: { foreign_gb: number; foreign_baseline_gb: number | null; free_gb: number } | null;
    };
    queue: { depth: number };
  };
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

export { freePort };
