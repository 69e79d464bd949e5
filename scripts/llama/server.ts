/**
 * Starts the llama-server that `build.sh` built on a tiny GGUF from `tiny-gguf.py`, on a free
 * loopback port, and waits until `/health` answers 200. For scripts only (never `npm test`).
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../tests/support/net.ts";

export const CACHE = process.env.QM_LLAMA_CACHE ?? join(homedir(), ".cache", "qm-llama");
export const LLAMA_SERVER = join(CACHE, "bin", "llama-server");
export const modelPath = (family: string) => join(CACHE, "models", `tiny-${family}.gguf`);

export interface LlamaServer {
  base: string;
  argv: string[];
  stop(): Promise<void>;
}

export async function startLlama(family: string, extra: string[] = []): Promise<LlamaServer> {
  const model = modelPath(family);
  for (const f of [LLAMA_SERVER, model]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: see scripts/llama/README.md`);
  }
  const port = freePort();
  const argv = [
    LLAMA_SERVER,
    ...["-m", model, "--host", "127.0.0.1", "--port", String(port)],
    ...["-c", "8192", "-np", "1", "-t", "1", "--jinja", "--no-webui"],
    ...extra,
  ];
  const proc = Bun.spawn(argv, { stdout: "ignore", stderr: "pipe" });
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    proc.kill("SIGTERM");
    await proc.exited;
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) {
      throw new Error(`llama-server exited ${proc.exitCode}: ${await proc.stderr.text()}`);
    }
    const ok = await fetch(`${base}/health`)
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ok) return { base, argv, stop };
    await Bun.sleep(200);
  }
  await stop();
  throw new Error("llama-server did not become healthy in 60 s");
}
