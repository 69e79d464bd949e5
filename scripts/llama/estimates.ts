/**
 * qm's GGUF estimate (`qm scan`, src/gpu/gguf/estimate.ts) against what a real llama-server
 * reports it allocated, for the tiny models of `tiny-gguf.py`: weights against the model
 * buffer, the KV cache against the KV buffer, the overhead against the compute and output
 * buffers, and the process's resident memory once loaded. Prints a Markdown table (docs/gpu.md).
 *
 *   npx bun scripts/llama/estimates.ts [--ctx N] [FAMILY…]
 *
 * The CPU build reports host buffers; on a GPU build the same lines name the card's (CUDA0).
 */
import { readFileSync } from "node:fs";
import { sizeModel } from "../../src/gpu/gguf/estimate.ts";
import { readModelFile } from "../../src/gpu/gguf/scan.ts";
import { freePort } from "../../tests/support/net.ts";
import { LLAMA_SERVER, modelPath } from "./server.ts";

const MIB = 2 ** 20;
const args = process.argv.slice(2);
const ctxAt = args.indexOf("--ctx");
const ctx = ctxAt >= 0 ? Number(args[ctxAt + 1]) : 8192;
const families = args.filter((a, i) => !a.startsWith("--") && i !== ctxAt + 1);

/** The buffers llama-server logs at -lv 4: `… model buffer size = 18.70 MiB`, summed by kind. */
function buffers(log: string): { model: number; kv: number; compute: number; output: number } {
  const sum = (re: RegExp) => [...log.matchAll(re)].reduce((s, m) => s + Number(m[1]), 0);
  return {
    model: sum(/model buffer size =\s+([\d.]+) MiB/g),
    kv: sum(/KV buffer size =\s+([\d.]+) MiB/g),
    compute: sum(/compute buffer size =\s+([\d.]+) MiB/g),
    output: sum(/output buffer size =\s+([\d.]+) MiB/g),
  };
}

async function measure(family: string) {
  const path = modelPath(family);
  const read = await readModelFile(path);
  if (!read.ok) throw new Error(read.reason);
  const est = sizeModel(read.model, { ctx });
  const port = freePort();
  const proc = Bun.spawn(
    [
      LLAMA_SERVER,
      "-m",
      path,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "-c",
      String(ctx),
    ].concat(["-np", "1", "-t", "1", "--no-webui", "-lv", "4"]),
    { stdout: "ignore", stderr: "pipe" },
  );
  let log = "";
  const reading = (async () => {
    for await (const chunk of proc.stderr) log += new TextDecoder().decode(chunk);
  })();
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !/listening on/.test(log)) await Bun.sleep(100);
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, "utf8"));
  proc.kill("SIGTERM");
  await proc.exited;
  await reading;
  const b = buffers(log);
  return { family, est, b, rssMib: rss ? Number(rss[1]) / 1024 : null };
}

const rows: string[] = [
  `| model (ctx ${ctx}) | weights: est / model buffer | KV: est / KV buffer | overhead: est / compute + output | total: est / reported | RSS loaded |`,
  "|---|---|---|---|---|---|",
];
for (const family of families.length > 0 ? families : ["llama3", "qwen3", "gemma4", "phi3"]) {
  const { est, b, rssMib } = await measure(family);
  const mib = (bytes: number) => (bytes / MIB).toFixed(1);
  const reported = b.model + b.kv + b.compute + b.output;
  rows.push(
    `| tiny-${family} | ${mib(est.weightsBytes)} / ${b.model.toFixed(1)} | ${mib(est.kvBytes)} / ${b.kv.toFixed(1)} | ` +
      `${mib(est.overheadBytes)} / ${(b.compute + b.output).toFixed(1)} | ${mib(est.totalBytes)} / ${reported.toFixed(1)} | ` +
      `${rssMib === null ? "–" : rssMib.toFixed(1)} |`,
  );
}
process.stdout.write(`${rows.join("\n")}\n(MiB)\n`);
