/**
 * Codex CLI end to end against the compiled `dist/qm`, with a scripted upstream that reasons
 * (`npm test` runs Codex against the demo model: tests/integration/clients/codex.test.ts).
 * `bun scripts/clients/codex.ts [path/to/codex]` (default: $CODEX_BIN, else the Codex the client
 * tests install, clients.ts). qm serves one model, the scripted `fake-upstream.ts`; Codex talks to
 * qm through a custom provider (`wire_api = "responses"`) in a temporary CODEX_HOME, with its
 * plugins, apps, shell snapshot and analytics off so it stays on loopback. Two `codex exec` turns:
 *   (a) one that calls its shell tool (`exec_command`) and then answers with the output;
 *   (b) one that answers in text.
 * Exits 1 when either does not end as scripted; qm and the model process are stopped either way.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "../../tests/support/net.ts";
import { QM, ROOT, startQm } from "../../tests/support/qm-process.ts";
import { CODEX, installClient, runClient, writeCodexHome } from "./clients.ts";

const installed = process.argv[2] ?? process.env.CODEX_BIN ?? (await installClient(CODEX));
if (typeof installed !== "string" && !installed.ok) throw new Error(installed.reason);
const codex = typeof installed === "string" ? installed : installed.bin;
const dir = mkdtempSync(join(tmpdir(), "qm-codex-"));
const home = join(dir, "home");
const work = join(dir, "work");
mkdirSync(work, { recursive: true });
const log = join(dir, "requests.jsonl");
const port = freePort();

writeFileSync(
  join(dir, "qm.toml"),
  `[server]
listen = ["127.0.0.1:${port}"]
start_port = ${20000 + Math.floor(Math.random() * 20000)}
state_dir = "${join(dir, "state")}"

[models.fake]
cmd = "${process.execPath} ${resolve(ROOT, "scripts/clients/fake-upstream.ts")} --port \${PORT} --log ${log}"
check_endpoint = "/health"
`,
);
// The provider config the README shows, pointed at this qm.
writeCodexHome(home, `http://127.0.0.1:${port}/v1`, "fake");

let failed = false;
function check(ok: boolean, what: string, detail = ""): void {
  process.stderr.write(`codex: ${ok ? "ok  " : "FAIL"} ${what}\n`);
  if (!ok) {
    failed = true;
    if (detail) process.stderr.write(`${detail}\n`);
  }
}

function exec(prompt: string): Promise<{ code: number; out: string; err: string }> {
  return runClient([codex, "exec", "--skip-git-repo-check", "--ephemeral", "-C", work, prompt], {
    cwd: work,
    env: { CODEX_HOME: home, QM_API_KEY: "unused" },
    timeoutMs: 60_000,
  });
}

if (!(await Bun.file(QM).exists())) throw new Error("dist/qm is missing: run `bun run build`");
const qm = await startQm(join(dir, "qm.toml"));
try {
  const a = await exec("Please run a shell command.");
  check(
    a.code === 0 && /The command printed:[\s\S]*qm-codex-ok/.test(a.out),
    "(a) codex calls exec_command through qm, then answers with its output",
    `${a.out}\n${a.err}`,
  );
  const b = await exec("Say hi.");
  check(
    b.code === 0 && b.out.trim() === "Hello from the fake upstream.",
    "(b) codex gets a text answer",
    `${b.out}\n${b.err}`,
  );
  const sent = readFileSync(log, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  check(sent.length === 3, `the upstream got 3 chat requests (got ${sent.length})`);
  check(
    sent.every((r) => r.stream === true),
    "every upstream request streamed (Codex only streams)",
  );
  const second = sent[1];
  check(
    second?.messages?.at(-2)?.reasoning_content === "Working out what to do.",
    "the reasoning Codex got back returned with the call (reasoning_content)",
    JSON.stringify(second?.messages?.at(-2)),
  );
  check(
    second?.messages?.at(-1)?.role === "tool" &&
      second.messages.at(-2)?.tool_calls?.[0]?.function?.name === "exec_command",
    "turn (a)'s second request carried the call and its output",
  );
} finally {
  const code = await qm.stop();
  check(code === 0, `qm exited ${code}`);
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
