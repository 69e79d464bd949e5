/**
 * The official Python `ollama` client against a real `qm serve` (python-client.py), when an
 * interpreter with the package is at hand: `$QM_OLLAMA_PYTHON`, else `python3`. Skipped
 * otherwise (the package is not a dependency of the project).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { BUILD_TIMEOUT_MS, needsBinary } from "../../support/binary.ts";
import { serve } from "../../support/e2e.ts";
import type { QmServer } from "../../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(30_000);

const PYTHON = process.env.QM_OLLAMA_PYTHON || "python3";
const SCRIPT = join(import.meta.dir, "python-client.py");

function hasClient(): boolean {
  try {
    return Bun.spawnSync([PYTHON, "-c", "import ollama"], { stdout: "ignore", stderr: "ignore" })
      .success;
  } catch {
    return false;
  }
}

const available = hasClient();

describe.skipIf(!available)("the Python ollama client", () => {
  let qm: QmServer;

  beforeAll(async () => {
    qm = await serve(`
[models.chat]
cmd = "\${demo} --token-ms 1 --tokens 5"

[models.embed]
cmd = "\${demo}"
capabilities = ["embedding"]
`);
  });

  afterAll(async () => {
    expect(await qm.stop()).toBe(0);
  });

  test("chat, stream, generate, embed, list, ps, show and a 404", async () => {
    const proc = Bun.spawn([PYTHON, SCRIPT, qm.url, "chat", "embed"], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    expect(err).toBe("");
    expect(out.trim()).toBe("ok");
    expect(code).toBe(0);
  });
});
