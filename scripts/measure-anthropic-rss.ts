/**
 * `bun scripts/measure-anthropic-rss.ts [MiB] [write bytes] [accented]`: how much qm's resident memory grows while one
 * huge SSE line (default 48 MiB: a single chat chunk whose `content` is that long) goes through
 * `dist/qm`, translated (`POST /v1/messages`, streamed) and, for comparison, relayed as it is
 * (`POST /v1/chat/completions`). Prints one JSON report; measures, asserts nothing.
 *
 * The upstream is a fake in this process (a model whose `cmd` only sleeps and whose `proxy`
 * points here), so the figures are qm's alone. RSS is VmRSS of the qm pid sampled every 5 ms;
 * growth is the peak during the request minus the level just before it.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const QM = join(ROOT, "dist/qm");
const MIB = 1024 * 1024;
const lineMiB = Number(process.argv[2] ?? 48);
const textBytes = Math.round(lineMiB * MIB);
/** Size of the fake upstream's writes (the network cuts them further). */
const writeBytes = Number(process.argv[3] ?? 64 * 1024);

// Varied ASCII text (what a model would write), built once; the fake sends it in 64 KiB writes.
// `accented` as the third argument makes it non-ASCII, which JS holds as 16-bit strings.
const word =
  process.argv[4] === "accented"
    ? "lorem ipsum dolor sit amet, consectetur adipiscing élit. "
    : "lorem ipsum dolor sit amet, consectetur adipiscing elit. ";
const text = word.repeat(Math.ceil(textBytes / word.length)).slice(0, textBytes);
const head = (delta: string) =>
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"big","choices":[{"index":0,"delta":${delta},"finish_reason":null}]}\n\n`;
const enc = new TextEncoder();
const big = enc.encode(head(`{"content":${JSON.stringify(text)}}`));
const tail = enc.encode(
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"big","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n`,
);

let small = false;
const upstream = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  fetch(req) {
    const path = new URL(req.url).pathname;
    if (path !== "/v1/chat/completions") return new Response("no such route", { status: 404 });
    const payload = small ? enc.encode(head('{"content":"hi"}')) : big;
    const body = new ReadableStream({
      type: "direct",
      async pull(c) {
        c.write(head('{"role":"assistant","content":""}'));
        for (let at = 0; at < payload.length; at += writeBytes) {
          await c.write(payload.subarray(at, at + writeBytes));
          await c.flush();
        }
        c.write(tail);
        c.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  },
});

const dir = mkdtempSync(join(tmpdir(), "qm-rss-"));
const config = join(dir, "quartermaster.toml");
await Bun.write(
  config,
  `[server]\nlisten = ["127.0.0.1:0"]\n\n[resources]\ngpu_probe = "off"\n\n` +
    `[models.big]\ncmd = "sleep 86400"\nproxy = "http://127.0.0.1:${upstream.port}"\n` +
    `check_endpoint = "none"\n`,
);
type Qm = ReturnType<typeof spawnQm>;
const spawnQm = () => Bun.spawn([QM, "serve", "-c", config], { stdout: "ignore", stderr: "pipe" });

/** Resolves with qm's address; keeps draining its log after (a closed pipe would kill it). */
function listening(qm: Qm): Promise<string> {
  return new Promise((resolve, reject) => {
    let log = "";
    const decoder = new TextDecoder();
    void (async () => {
      for await (const chunk of qm.stderr) {
        log += decoder.decode(chunk);
        const m = /listening on (http:\/\/\S+)/.exec(log);
        if (m) resolve(m[1] as string);
      }
      reject(new Error(`qm exited:\n${log}`));
    })();
  });
}

function rssMb(qm: Qm): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${qm.pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : 0;
}

const ask = (path: string) =>
  path === "/v1/messages"
    ? { model: "big", max_tokens: 10, stream: true, messages: [{ role: "user", content: "hi" }] }
    : { model: "big", stream: true, messages: [{ role: "user", content: "hi" }] };

/** One streamed request, read to the end; RSS peak growth over the level before it. */
async function measure(qm: Qm, url: string, path: string) {
  const before = rssMb(qm);
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMb(qm));
  }, 5);
  const t0 = performance.now();
  const res = await fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(ask(path)),
  });
  let bytes = 0;
  let tail: Uint8Array = new Uint8Array(0);
  for await (const chunk of res.body as ReadableStream<Uint8Array>) {
    bytes += chunk.length;
    tail = chunk;
  }
  // A sanity check, not a measurement: the answer ended the way a complete one does.
  const end = new TextDecoder().decode(tail.subarray(-200));
  clearInterval(timer);
  peak = Math.max(peak, rssMb(qm));
  return {
    path,
    status: res.status,
    response_mib: Math.round((bytes / MIB) * 10) / 10,
    complete: end.includes(path === "/v1/messages" ? "message_stop" : "[DONE]"),
    seconds: Math.round(performance.now() - t0) / 1000,
    rss_before_mb: Math.round(before),
    rss_peak_mb: Math.round(peak),
    growth_mb: Math.round(peak - before),
    growth_x_line: Math.round((((peak - before) * MIB) / big.length) * 10) / 10,
  };
}

/** A fresh qm per path, so neither measurement starts from the other's leftovers. */
async function run(path: string) {
  const qm = spawnQm();
  try {
    const url = await listening(qm);
    // Warm the path (model start, JIT) with a small answer first.
    small = true;
    const r = await fetch(url + path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(ask(path)),
    });
    await r.arrayBuffer();
    small = false;
    return await measure(qm, url, path);
  } finally {
    qm.kill("SIGTERM");
    await qm.exited;
  }
}

try {
  const translated = await run("/v1/messages");
  const relayed = await run("/v1/chat/completions");
  console.log(
    JSON.stringify({ line_mib: Math.round((big.length / MIB) * 10) / 10, translated, relayed }),
  );
} finally {
  upstream.stop(true);
  rmSync(dir, { recursive: true, force: true });
}
