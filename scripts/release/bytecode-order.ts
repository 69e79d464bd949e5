/**
 * The layout of qm's bytecode. qm ships compiled to bytecode (`--bytecode`: no parse at start).
 * Given the record of a run (`--bytecode-order`; a run writes one where
 * `BUN_BYTECODE_ORDER_OUT` points), `bun build` lays the functions out in the order that run
 * first used them, so what a start touches sits together and fewer of the binary's pages are
 * read in: idle RSS about 3 MB lower on this box, a tenth of what is qm's own.
 *
 * `recordOrder` runs a freshly built qm the way a user first meets it — `qm serve` on a demo
 * model, a request on each API (streamed and not), the model list, the status, a stop — with
 * the demo model server recording its own start beside it, and returns both records, qm's
 * first. The records name
 * functions by a hash of their code, so one recorded on this machine lays out every target's
 * build of the same source; a function it does not name goes after the named ones.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startQm } from "../../tests/support/qm-process.ts";

export interface Recorded {
  /** The record files, most important first; empty when the run could not record. */
  files: string[];
  /** Why there is no record, when the run failed (the build then goes on without one). */
  failed?: string;
  /** Removes the records' folder. */
  dispose(): void;
}

/**
 * Runs `binary` (this machine's build) once and returns what it recorded. Never throws: a run
 * that fails (a box where qm cannot listen on loopback, say) records nothing and says why, and
 * the binary is laid out as compiled — slower to page in, not wrong.
 */
export async function recordOrder(binary: string): Promise<Recorded> {
  const dir = mkdtempSync(join(tmpdir(), "qm-bytecode-order-"));
  const serveOut = join(dir, "serve.order");
  const demoOut = join(dir, "demo.order");
  const config = join(dir, "qm.toml");
  writeFileSync(
    config,
    `[server]
listen = ["127.0.0.1:0"]
start_port = ${20000 + Math.floor(Math.random() * 20000)}
state_dir = ${JSON.stringify(join(dir, "state"))}

[models.demo]
cmd = "\${QM_BIN} demo-upstream --port \${PORT} --name \${MODEL_ID} --tokens 4 --token-ms 0"
env = { BUN_BYTECODE_ORDER_OUT = ${JSON.stringify(demoOut)} }
`,
  );
  const dispose = () => rmSync(dir, { recursive: true, force: true });
  try {
    await run(binary, config, serveOut);
  } catch (err) {
    return { files: [], failed: err instanceof Error ? err.message : String(err), dispose };
  }
  return { files: [serveOut, demoOut].filter((f) => existsSync(f)), dispose };
}

async function run(binary: string, config: string, serveOut: string): Promise<void> {
  const qm = await startQm(config, { BUN_BYTECODE_ORDER_OUT: serveOut }, { command: [binary] });
  try {
    const messages = [{ role: "user", content: "hi" }];
    const post = (path: string, body: object) =>
      fetch(`${qm.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "demo", ...body }),
        signal: AbortSignal.timeout(30_000),
      }).then((r) => r.text());
    // Each API once, streamed and not; the first loads the model.
    for (const stream of [false, true]) {
      await post("/v1/chat/completions", { stream, messages });
      await post("/v1/messages", { stream, messages, max_tokens: 16 });
      await post("/v1/responses", { stream, input: "hi" });
      await post("/api/chat", { stream, messages });
    }
    for (const path of ["/v1/models", "/api/status", "/api/tags"]) {
      await fetch(`${qm.url}${path}`).then((r) => r.text());
    }
  } finally {
    await qm.stop();
  }
}
