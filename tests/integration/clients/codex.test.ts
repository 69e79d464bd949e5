/**
 * Codex CLI (`codex exec`, installed from npm into a cache; skipped when the registry cannot be
 * reached) completes one tool turn against dist/qm on the shipped config: demo-coder calls its
 * shell tool, Codex runs the command, and the answer that ends the loop quotes its output.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  CODEX,
  installClient,
  jsonLines,
  runClient,
  writeCodexHome,
} from "../../../scripts/clients/clients.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../../support/binary.ts";
import { type QmServer, startQm } from "../../support/qm-process.ts";
import { shippedConfig } from "./support.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);
setDefaultTimeout(120_000);

const codex = await installClient(CODEX);
const title = `Codex CLI ${CODEX.version}${codex.ok ? "" : ` (skipped: ${codex.reason})`}`;
if (!codex.ok) console.warn(`tests/integration/clients/codex.test.ts: ${title}`);

let qm: QmServer;
let dir: string;

describe.skipIf(!codex.ok)(title, () => {
  beforeAll(async () => {
    const shipped = shippedConfig();
    dir = shipped.dir;
    qm = await startQm(shipped.path);
  });
  afterAll(async () => {
    if (qm) expect(await qm.stop()).toBe(0);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("codex exec: demo-coder calls exec_command, Codex runs it, the answer quotes its output", async () => {
    const home = join(dir, "codex-home");
    const work = join(dir, "work");
    mkdirSync(work, { recursive: true });
    writeCodexHome(home, `${qm.url}/v1`, "demo-coder");
    const bin = (codex as { bin: string }).bin;
    const run = await runClient(
      [bin, "exec", "--json", "--skip-git-repo-check", "--ephemeral", "-C", work, "Run a command."],
      { cwd: work, env: { CODEX_HOME: home, QM_API_KEY: "anything" } },
    );
    const detail = `exit ${run.code}\n${run.out}\n${run.err}`;
    expect({ code: run.code, detail }).toMatchObject({ code: 0 });
    const items = jsonLines(run.out)
      .filter((e) => e.type === "item.completed")
      .map((e) => e.item as Record<string, unknown>);
    // Codex parsed the arguments against exec_command's schema and ran the command.
    const ran = items.find((i) => i.type === "command_execution");
    expect({ ran, detail }).toMatchObject({
      ran: { command: expect.stringContaining("echo hello from demo-coder"), status: "completed" },
    });
    const answers = items.filter((i) => i.type === "agent_message").map((i) => String(i.text));
    const last = answers.at(-1) ?? "";
    expect(last).toStartWith("Done. The tool said:");
    // The answer quotes the end of what the command printed.
    const printed = String(ran!.aggregated_output).trim().split("\n").at(-1)!;
    expect(last).toEndWith(printed);
    expect(items.at(-1)).toEqual(items.find((i) => i.type === "agent_message" && i.text === last));
  });
});
