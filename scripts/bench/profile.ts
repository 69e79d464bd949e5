/**
 * `bun scripts/bench/profile.ts --workload json|firehose|realistic [--against REV] [--out DIR]`:
 * runs qm from source under Bun's sampling CPU profiler (`--cpu-prof --cpu-prof-md`) through one
 * workload, stops it, and leaves the profile (`.cpuprofile` and a Markdown summary) in DIR
 * (default `.bench/profiles/`). With `--against REV`, the same for REV's sources (exported by
 * `bench --against`'s builder), so the two profiles can be read side by side.
 *
 * Workloads: `json` — 20 000 small non-streamed requests from 8 clients; `firehose` — 50
 * concurrent 400-token streams with no pause between tokens, 4 times; `realistic` — 64
 * concurrent streams, 20 ms between tokens, 200 tokens.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { buildRevision } from "./against.ts";
import { closedLoop, streamLoad } from "./load.ts";
import { startPlain, stopChild, withCleanup } from "./procs.ts";
import { load, QM_BIN, ROOT } from "./qm.ts";
import { freePort, log, setLogTag, shellQuote } from "./util.ts";

setLogTag("profile");
const STAMP = join(import.meta.dir, "stamp-upstream.ts");

function arg(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
}

const workload = arg("--workload") ?? "firehose";
if (!["json", "firehose", "realistic"].includes(workload)) {
  throw new Error(`--workload: json, firehose or realistic, got ${workload}`);
}
const out = arg("--out") ?? join(ROOT, ".bench", "profiles");
const against = arg("--against");

function toml(port: number): string {
  const stamp = (args: string) =>
    `${[process.execPath, STAMP].map(shellQuote).join(" ")} --port \${PORT} --name \${MODEL_ID} ${args}`;
  const models: Record<string, string> = {
    "p-json": `${shellQuote(QM_BIN)} demo-upstream --port \${PORT} --name \${MODEL_ID} --token-ms 0 --tokens 16`,
    "p-fire": stamp("--tokens 400 --token-ms 0"),
    "p-real": stamp("--tokens 200 --token-ms 20"),
  };
  const ids = Object.keys(models);
  return `[server]
listen = ["127.0.0.1:${port}"]
start_port = ${20000 + Math.floor(Math.random() * 10000)}
[resources]
gpu_probe = "off"
[groups.p]
members = ${JSON.stringify(ids)}
swap = false
exclusive = false
${ids.map((id) => `[models.${id}]\ncmd = ${JSON.stringify(models[id])}\n`).join("")}`;
}

async function main(): Promise<void> {
  const root = against ? (await buildRevision(against)).bin.replace(/\/dist\/qm$/, "") : ROOT;
  const label = against ? `rev-${against}` : "current";
  mkdirSync(out, { recursive: true });
  const port = freePort();
  const config = join(out, `${label}-${workload}.toml`);
  await Bun.write(config, toml(port));
  const proc = startPlain(
    "qm",
    [
      process.execPath,
      "--cpu-prof",
      "--cpu-prof-md",
      "--cpu-prof-interval=250",
      `--cpu-prof-dir=${out}`,
      `--cpu-prof-name=${label}-${workload}`,
      join(root, "src/cli/main.ts"),
      "serve",
      "-c",
      config,
    ],
    join(out, `${label}-${workload}.log`),
    // Its own state, as a fresh install's (not the user's database).
    { XDG_STATE_HOME: join(out, `state-${label}-${workload}`) },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (
      await fetch(`${url}/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await Bun.sleep(20);
  }
  const qm = { pid: proc.pid, url };
  const chat = `${url}/v1/chat/completions`;
  if (workload === "json") {
    await load(qm, "p-json");
    const body = JSON.stringify({ model: "p-json", messages: [{ role: "user", content: "hi" }] });
    const r = await closedLoop(chat, body, 8, 8000);
    log(`json: ${r.latencies.length} requests, ${r.errors} errors`);
  } else if (workload === "firehose") {
    await load(qm, "p-fire");
    for (let i = 0; i < 4; i++) await streamLoad(chat, "p-fire", 50, 400);
  } else {
    await load(qm, "p-real");
    await streamLoad(chat, "p-real", 64, 200);
  }
  await stopChild(proc.pid);
  log(`profile in ${out}/${label}-${workload}.cpuprofile (and .md)`);
}

await withCleanup(main, () => {});
