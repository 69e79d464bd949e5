/**
 * qm's managed nodes against a real mistral.rs (CPU build, tiny GGUFs, loopback): not part of
 * `npm test`. Two nodes, each its own process:
 * - `stock`: `mistralrs from-config` with three models (stock multi-model serving: no loader
 *   configs), `max_loaded = 1`, one pinned;
 * - `single`: `mistralrs serve` with one model (a loader config: it unloads and reloads),
 *   `defrag_after_cycles = 1` with a `restart_cmd` that restarts it (this script, `--restart`).
 * It walks adopt, unload, gone, max_loaded, pinned, reload, a reload of a model loaded outside
 * qm, defrag and a node restart, and prints what qm and the nodes said at each step.
 *
 *   npm run build && npx bun scripts/mistralrs/real-node.ts
 *
 * Needs `~/.cache/qm-mistralrs/bin/mistralrs` (`cargo install mistralrs-cli --version 0.8.1
 * --root ~/.cache/qm-mistralrs`; QM_MISTRALRS to point elsewhere) and the tiny GGUFs of
 * `scripts/llama/tiny-gguf.py`. See scripts/mistralrs/README.md.
 */
import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "../../tests/support/net.ts";
import { QM, startQm } from "../../tests/support/qm-process.ts";
import { CACHE as LLAMA_CACHE } from "../llama/server.ts";

const BIN =
  process.env.QM_MISTRALRS ?? join(homedir(), ".cache", "qm-mistralrs", "bin", "mistralrs");
const MODELS = join(LLAMA_CACHE, "models");
/**
 * A GGUF model's id on mistral.rs is its `model_id` (the folder it is read from): each model
 * gets a folder of its own (a link to its file), named as qm will see it.
 */
const STOCK_MODELS = {
  alpha: "tiny-llama3.gguf",
  beta: "tiny-qwen3.gguf",
  gamma: "tiny-phi3.gguf",
};
const SINGLE_MODEL = { solo: "tiny-llama3.gguf" };

interface NodeRecord {
  name: string;
  argv: string[];
  /** Model folders are given relative to it, so that ids are short. */
  cwd: string;
  port: number;
  pid: number;
  log: string;
}

const recordPath = (dir: string, name: string) => join(dir, `${name}.json`);

/** Starts a node process detached (it outlives a `--restart` run), logging to its file. */
function launch(rec: Omit<NodeRecord, "pid">, dir: string): NodeRecord {
  const out = openSync(rec.log, "a");
  const child = spawn(rec.argv[0]!, rec.argv.slice(1), {
    cwd: rec.cwd,
    detached: true,
    stdio: ["ignore", out, out],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "info" },
  });
  child.unref();
  const full = { ...rec, pid: child.pid! };
  writeFileSync(recordPath(dir, rec.name), JSON.stringify(full));
  return full;
}

async function kill(pid: number): Promise<void> {
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await Bun.sleep(100);
  }
  try {
    process.kill(pid, "SIGKILL");
  } catch {}
}

/** `--restart NAME --dir DIR`: what qm's `restart_cmd` runs. */
async function restartMode(name: string, dir: string): Promise<void> {
  const rec = JSON.parse(readFileSync(recordPath(dir, name), "utf8")) as NodeRecord;
  await kill(rec.pid);
  const next = launch(rec, dir);
  writeFileSync(join(dir, `${name}.restarts`), `${next.pid}\n`, { flag: "a" });
}

async function json(url: string, init?: RequestInit): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body };
}

async function until<T>(what: string, fn: () => Promise<T>, ok: (v: T) => boolean, ms = 180_000) {
  const deadline = Date.now() + ms;
  let last: T | undefined;
  while (Date.now() < deadline) {
    try {
      last = await fn();
      if (ok(last)) return last;
    } catch {}
    await Bun.sleep(250);
  }
  throw new Error(`${what}: not within ${ms / 1000} s (last: ${JSON.stringify(last)})`);
}

type Listed = { id: string; status?: string }[];
const nodeList = async (port: number) =>
  ((await json(`http://127.0.0.1:${port}/v1/models`)).body as { data: Listed }).data.filter(
    (e) => e.status !== undefined,
  );

function say(step: string, what: unknown): void {
  console.log(`\n## ${step}\n${typeof what === "string" ? what : JSON.stringify(what, null, 2)}`);
}

async function main(): Promise<void> {
  const files = [...Object.values(STOCK_MODELS), ...Object.values(SINGLE_MODEL)];
  for (const f of [BIN, QM, ...files.map((m) => join(MODELS, m))]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: see scripts/mistralrs/README.md`);
  }
  const dir = mkdtempSync(join(tmpdir(), "qm-mistralrs-real-"));
  const cwd = join(dir, "models");
  for (const [id, file] of Object.entries({ ...STOCK_MODELS, ...SINGLE_MODEL })) {
    mkdirSync(join(cwd, id), { recursive: true });
    symlinkSync(join(MODELS, file), join(cwd, id, file));
  }
  const ports = { stock: freePort(), single: freePort(), qm: freePort() };
  const model = ([id, file]: [string, string]) =>
    `[[models]]\nkind = "text"\nmodel_id = "${id}"\n[models.format]\nformat = "gguf"\nquantized_file = "${file}"\n[models.device]\ncpu = true\nmax_seq_len = 512\n`;
  const stockToml = join(dir, "stock.toml");
  writeFileSync(
    stockToml,
    `command = "serve"\n[server]\nhost = "127.0.0.1"\nport = ${ports.stock}\n\n${Object.entries(STOCK_MODELS).map(model).join("\n")}`,
  );
  const launchStock = () =>
    launch(
      {
        name: "stock",
        argv: [BIN, "from-config", "--file", stockToml],
        cwd,
        port: ports.stock,
        log: join(dir, "stock.log"),
      },
      dir,
    );
  const nodes = [
    launchStock(),
    launch(
      {
        name: "single",
        argv: [
          BIN,
          "serve",
          "--port",
          String(ports.single),
          "--host",
          "127.0.0.1",
          "text",
          "-m",
          "solo",
          "--format",
          "gguf",
          "-f",
          SINGLE_MODEL.solo,
          "--cpu",
          "--max-seq-len",
          "512",
        ],
        cwd,
        port: ports.single,
        log: join(dir, "single.log"),
      },
      dir,
    ),
  ];
  const pidOf = (name: string) =>
    (JSON.parse(readFileSync(recordPath(dir, name), "utf8")) as NodeRecord).pid;
  let qm: Awaited<ReturnType<typeof startQm>> | undefined;
  try {
    const stockIds = (
      await until(
        "stock node up",
        () => nodeList(ports.stock),
        (l) => l.length === 3,
      )
    ).map((e) => e.id);
    const singleIds = (
      await until(
        "single node up",
        () => nodeList(ports.single),
        (l) => l.length === 1,
      )
    ).map((e) => e.id);
    say("the nodes' own lists at their start", {
      stock: await nodeList(ports.stock),
      single: await nodeList(ports.single),
    });
    const [m1, m2, m3] = stockIds as [string, string, string];
    const x = singleIds[0]!;
    const q = (s: string) => JSON.stringify(s);
    writeFileSync(
      join(dir, "qm.toml"),
      `[server]\nlisten = ["127.0.0.1:${ports.qm}"]\nhealth_check_timeout_s = 180\nstate_dir = "${join(dir, "state")}"\n\n` +
        `[peers.stock]\nurl = "http://127.0.0.1:${ports.stock}"\nkind = "mistralrs"\nmax_loaded = 1\npinned = [${q(m1)}]\npoll_s = 1\ntimeout_s = 30\n\n` +
        `[peers.single]\nurl = "http://127.0.0.1:${ports.single}"\nkind = "mistralrs"\npinned = [${q(x)}]\npoll_s = 30\ntimeout_s = 30\ndefrag_after_cycles = 1\nrestart_cmd = ${q(`${process.execPath} ${resolve(import.meta.path)} --restart single --dir ${dir}`)}\n`,
    );
    qm = await startQm(join(dir, "qm.toml"));
    const base = qm.url;
    const status = async () =>
      (await json(`${base}/api/status`)).body as {
        models: { id: string; state: string; last_error?: string | null }[];
        peers: { name: string; state: string; can_unload?: boolean | null }[];
      };
    const states = async () =>
      Object.fromEntries((await status()).models.map((m) => [m.id, m.state]));
    const canUnload = async () =>
      Object.fromEntries((await status()).peers.map((p) => [p.name, p.can_unload]));
    const chat = (m: string) =>
      json(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: m,
          max_tokens: 4,
          messages: [{ role: "user", content: "hi" }],
        }),
      });
    const unload = (m: string) =>
      json(`${base}/api/models/${encodeURIComponent(m)}/unload`, { method: "POST" });
    const short = (r: { status: number; body: unknown }) => ({
      status: r.status,
      body:
        typeof r.body === "object" && r.body !== null && "error" in r.body
          ? (r.body as { error: { message: string } }).error.message
          : typeof r.body === "object" && r.body !== null && "choices" in r.body
            ? "(a chat answer)"
            : r.body,
    });
    const qmLog = (re: RegExp) =>
      qm!
        .log()
        .split("\n")
        .filter((l) => re.test(l));

    // 1. adopt: every model the nodes loaded at their start is counted, none reloaded.
    await until(
      "adopted",
      states,
      (s) => Object.values(s).filter((v) => v === "ready").length === 4,
    );
    say("1. adopt (both nodes loaded their models at start)", {
      states: await states(),
      can_unload: await canUnload(),
      log: qmLog(/more than max_loaded|loaded outside qm/),
    });

    // 2. a chat through qm on each node.
    say("2. chat", {
      [`stock/${m2}`]: short(await chat(`stock/${m2}`)),
      [`single/${x}`]: short(await chat(`single/${x}`)),
    });

    // 3. unload on the stock node: no_loader_config, the model dropped there.
    say("3. qm unload on stock from-config serving", {
      unload: short(await unload(`stock/${m3}`)),
    });
    await until("stock marked", canUnload, (c) => c.stock === false);
    say("3b. after it", {
      node_list: await nodeList(ports.stock),
      states: await states(),
      can_unload: await canUnload(),
      log: qmLog(/could not unload|cannot unload/),
    });

    // 4. gone: the dropped model is refused in qm's envelope, without a reload; nothing evicted.
    say("4. gone: a request for the dropped model", {
      chat: short(await chat(`stock/${m3}`)),
      node_list: await nodeList(ports.stock),
    });

    // 5. single node: unload works (can_unload true), the next request reloads it.
    say("5. unload on `mistralrs serve` (one model)", {
      unload: short(await unload(`single/${x}`)),
    });
    await until("single unloaded", states, (s) => s[`single/${x}`] === "stopped");
    say("5b. after it", { node_list: await nodeList(ports.single), can_unload: await canUnload() });
    const restartsBefore = existsSync(join(dir, "single.restarts"));
    const pidBefore = pidOf("single");
    say("6. reload (a request); one unload/reload cycle: the defrag restart follows", {
      chat: short(await chat(`single/${x}`)),
    });
    // 7. defrag: restart_cmd restarts it; its model (loaded at start) is adopted, not reloaded.
    await until(
      "single restarted",
      async () => pidOf("single"),
      (p) => p !== pidBefore,
    );
    await until("single back and adopted", states, (s) => s[`single/${x}`] === "ready");
    await Bun.sleep(2000);
    say("7. defrag restart", {
      restarted_before: restartsBefore,
      pid: { before: pidBefore, after: pidOf("single") },
      node_list: await nodeList(ports.single),
      states: await states(),
      model_log: (await json(`${base}/api/models/${encodeURIComponent(`single/${x}`)}/logs`)).body,
      log: qmLog(/restart|adopt|loaded outside/),
    });

    // 8. a model loaded on the node outside qm, then asked for before qm's next poll (30 s).
    await unload(`single/${x}`);
    await until("single unloaded again", states, (s) => s[`single/${x}`] === "stopped");
    const outside = await json(`http://127.0.0.1:${ports.single}/v1/models/reload`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model_id: x }),
    });
    say("8. a reload outside qm, then a request before qm's next poll", {
      outside: outside.body,
      chat: short(await chat(`single/${x}`)),
      node_list: await nodeList(ports.single),
      model_log: (await json(`${base}/api/models/${encodeURIComponent(`single/${x}`)}/logs`)).body,
    });

    // 9. a node restart outside qm: down (refused, no swap), back (adopted again).
    await kill(pidOf("stock"));
    await until(
      "stock down",
      status,
      (s) => s.peers.find((p) => p.name === "stock")?.state === "down",
    );
    say("9. the stock node killed: a request for a loaded model, and one for a stopped model", {
      loaded: short(await chat(`stock/${m2}`)),
      stopped: short(await chat(`stock/${m3}`)),
      states: await states(),
      swaps: ((await json(`${base}/api/status`)).body as { swaps: unknown[] }).swaps,
    });
    launchStock();
    await until("stock back", states, (s) => s[`stock/${m3}`] === "ready");
    say("9b. the stock node back", {
      states: await states(),
      can_unload: await canUnload(),
      chat: short(await chat(`stock/${m1}`)),
    });
    say("qm's log (node lines)", qmLog(/node |stock\/|single\//).join("\n"));
  } finally {
    await qm?.stop();
    for (const n of ["stock", "single"]) await kill(pidOf(n));
    void nodes;
    console.log(`\n(node logs and configs in ${dir})`);
  }
}

const i = process.argv.indexOf("--restart");
if (i !== -1) {
  const d = process.argv[process.argv.indexOf("--dir") + 1]!;
  await restartMode(process.argv[i + 1]!, d);
} else {
  await main();
}
