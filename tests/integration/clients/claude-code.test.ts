/**
 * Claude Code (`claude -p`, installed from npm into a cache; skipped when the registry cannot be
 * reached) completes one tool turn against dist/qm on the shipped config: its `claude-…` model
 * name lands on demo-coder, which calls Bash with arguments valid for the schema Claude Code
 * sent; Claude Code runs it, and the answer that ends the loop quotes its output.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  CLAUDE_CODE,
  claudeEnv,
  installClient,
  jsonLines,
  runClient,
} from "../../../scripts/clients/clients.ts";
import { schemaErrors } from "../../../src/demo/json-schema.ts";
import tools from "../../demo/fixtures/claude-code-2.1.197-tools.json";
import { BUILD_TIMEOUT_MS, needsBinary } from "../../support/binary.ts";
import { type QmServer, startQm } from "../../support/qm-process.ts";
import { shippedConfig } from "./support.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);
setDefaultTimeout(120_000);

const claude = await installClient(CLAUDE_CODE);
const title = `Claude Code ${CLAUDE_CODE.version}${claude.ok ? "" : ` (skipped: ${claude.reason})`}`;
if (!claude.ok) console.warn(`tests/integration/clients/claude-code.test.ts: ${title}`);

let qm: QmServer;
let dir: string;

type Block = {
  type: string;
  name?: string;
  input?: unknown;
  content?: unknown;
  is_error?: boolean;
};

describe.skipIf(!claude.ok)(title, () => {
  beforeAll(async () => {
    const shipped = shippedConfig();
    dir = shipped.dir;
    qm = await startQm(shipped.path);
  });
  afterAll(async () => {
    if (qm) expect(await qm.stop()).toBe(0);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("claude -p: demo-coder calls Bash validly, Claude Code runs it, the answer quotes its output", async () => {
    const work = join(dir, "work");
    mkdirSync(work, { recursive: true });
    const bin = (claude as { bin: string }).bin;
    const run = await runClient(
      [bin, "-p", "Run a command.", "--output-format", "stream-json", "--verbose"],
      { cwd: work, env: claudeEnv(qm.url, join(dir, "claude-home")) },
    );
    const detail = `exit ${run.code}\n${run.out}\n${run.err}`;
    expect({ code: run.code, detail }).toMatchObject({ code: 0 });
    const events = jsonLines(run.out);
    const blocks = (role: string) =>
      events
        .filter((e) => e.type === role)
        .flatMap((e) => ((e.message as { content?: Block[] }).content ?? []) as Block[]);
    const use = blocks("assistant").find((b) => b.type === "tool_use");
    expect({ use, detail }).toMatchObject({ use: { name: "Bash" } });
    const bash = tools.find((t) => t.function.name === "Bash")!;
    expect(schemaErrors(bash.function.parameters, use!.input)).toEqual([]);
    expect(use!.input).toEqual({ command: "echo hello from demo-coder" });
    // Claude Code accepted the arguments (no validation error) and ran the command.
    const result = blocks("user").find((b) => b.type === "tool_result");
    expect(result).toMatchObject({ is_error: false });
    const output = String(result!.content).trim();
    const end = events.at(-1) as { type: string; subtype: string; result: string };
    expect({ type: end.type, subtype: end.subtype }).toEqual({
      type: "result",
      subtype: "success",
    });
    expect(end.result).toBe(`Done. The tool said: ${output.replace(/\s+/g, " ")}`);
  });
});
