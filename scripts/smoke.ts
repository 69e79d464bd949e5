// Smoke run of the compiled binary on the shipped config, as a user would: version, config
// check, serve, a request that loads a model, a streamed one that swaps, `qm status`, SIGTERM
// → exit 0 with no model process left behind.
import { existsSync } from "node:fs";
import { freePort } from "../tests/support/net.ts";
import { alive, QM, ROOT, startQm } from "../tests/support/qm-process.ts";

function check(ok: unknown, what: string): void {
  if (!ok) throw new Error(`smoke: ${what}`);
  process.stderr.write(`smoke: ok  ${what}\n`);
}

async function run(args: string[]): Promise<{ code: number; out: string }> {
  const p = Bun.spawn([QM, ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([p.stdout.text(), p.stderr.text()]);
  return { code: await p.exited, out: out + err };
}

check(existsSync(QM), "dist/qm exists (run `npm run build` first)");
const version = await run(["version"]);
// `npm run build` stamps the commit and date; "unknown" only outside a git checkout.
check(
  version.code === 0 &&
    /^qm \d+\.\d+\.\d+\S* \(commit ([0-9a-f]{7,}|unknown), built (\d{4}-\d\d-\d\d|unknown); bun \d+\.\d+\.\d+\)\n$/.test(
      version.out,
    ),
  `qm version → ${version.out.trim()}`,
);
const checked = await run(["config", "check", "-c", "quartermaster.toml"]);
check(checked.code === 0, `qm config check quartermaster.toml → ${checked.out.trim()}`);

const port = freePort();
const qm = await startQm("quartermaster.toml", {
  QM_SERVER__LISTEN: `127.0.0.1:${port}`,
  QM_SERVER__START_PORT: String(20000 + Math.floor(Math.random() * 20000)),
});
let pids: number[] = [];
try {
  const emb = await fetch(`${qm.url}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "demo-embed", input: "hello" }),
  });
  check(
    emb.status === 200 && emb.headers.get("x-qm-model") === "demo-embed",
    "embeddings load demo-embed",
  );
  await emb.json();

  const chat = await fetch(`${qm.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "gpt-4o-mini",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    }),
  });
  const text = await chat.text();
  check(
    chat.status === 200 && text.startsWith(": qm-status:"),
    "streamed chat shows the wait status first",
  );
  check(text.includes("data: [DONE]"), "streamed chat reaches [DONE]");

  // The dashboard is built into the binary: the page and its script come from dist/qm itself.
  const page = await fetch(`${qm.url}/ui/`);
  const script = await fetch(`${qm.url}/ui/app.js`);
  check(
    page.status === 200 &&
      (await page.text()).includes("./app.js") &&
      script.status === 200 &&
      (await script.text()).length > 10_000,
    "the dashboard is served at /ui/",
  );

  const status = await run(["status", "--url", qm.url]);
  check(
    status.code === 0 && /demo-chat\s+ready/.test(status.out),
    "qm status shows demo-chat ready",
  );
  const json = (await (await fetch(`${qm.url}/api/status`)).json()) as {
    models: { pid: number | null }[];
  };
  pids = json.models.map((m) => m.pid).filter((p): p is number => p !== null);
  check(pids.length >= 1, `model processes running: ${pids.join(", ")}`);
} finally {
  const code = await qm.stop("SIGTERM");
  check(code === 0, `SIGTERM → exit ${code}`);
}
check(
  pids.every((p) => !alive(p)),
  "no model process outlives qm",
);
process.stderr.write("smoke: passed\n");
