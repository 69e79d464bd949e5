/**
 * The control path: what qm adds between a request and a model that is not running yet.
 *
 * - spawn: the request is sent → the model's command has started (the command is wrapped in
 *   `bash -c`, whose first act is to write `$EPOCHREALTIME`; bash's own start, ~1 ms, is in
 *   the figure for every binary alike);
 * - readiness: the upstream's load ended → the client's first byte (non-streamed), as in
 *   section (c);
 * - cold stream first byte: a streamed request for a stopped model → the first body byte the
 *   client reads (qm's wait-status placeholder; nothing may be awaited before it goes out);
 * - swap: two models in one swap group, asked for in turn, each request evicting the other:
 *   request → whole answer, p50.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { modelStatus, type Qm, unload } from "./qm.ts";
import { epochMs, log, percentile, round, shellQuote } from "./util.ts";

const STAMP = join(import.meta.dir, "stamp-upstream.ts");

export interface ControlFiles {
  readyFile: string;
  spawnFile: string;
}

/** Config models for this section: `ctl-cold` (spawn-stamped, loads in `loadDelayMs`), `ctl-alpha`, `ctl-beta`. */
export function controlModels(upstreamQm: string, f: ControlFiles, loadDelayMs: number): string {
  const stamp = [process.execPath, STAMP]
    .map(shellQuote)
    .join(" ")
    .concat(
      ` --port \${PORT} --name ctl-cold --load-delay-ms ${loadDelayMs} --ready-file ${shellQuote(f.readyFile)}`,
    );
  // `exec` keeps the upstream as the process qm started (its signals reach it directly).
  const script = `echo $EPOCHREALTIME > ${shellQuote(f.spawnFile)}; exec ${stamp}`;
  const demo = `${shellQuote(upstreamQm)} demo-upstream --port \${PORT} --name \${MODEL_ID} --token-ms 0 --tokens 8`;
  const q = JSON.stringify;
  return `
[groups.ctl-cold]
members = ["ctl-cold"]
swap = true
exclusive = false

[groups.ctl-pair]
members = ["ctl-alpha", "ctl-beta"]
swap = true
exclusive = false

[models.ctl-cold]
cmd = ${q(`bash -c ${shellQuote(script)}`)}

[models.ctl-alpha]
cmd = ${q(demo)}

[models.ctl-beta]
cmd = ${q(demo)}
`;
}

const JSON_HEADERS = { "content-type": "application/json" };

function chat(model: string, stream: boolean): string {
  return JSON.stringify({ model, stream, messages: [{ role: "user", content: "hi" }] });
}

async function waitFile(path: string): Promise<string | null> {
  for (let w = 0; w < 200; w++) {
    try {
      return readFileSync(path, "utf8");
    } catch {
      await Bun.sleep(5);
    }
  }
  return null;
}

export interface ControlFigures {
  spawn_ms_p50: number;
  readiness_ms_p50: number;
  readiness_ms_max: number;
  cold_first_byte_ms_p50: number;
  swap_ms_p50: number;
}

/** `runs` cold loads (half streamed, half not) and `runs` swaps. */
export async function controlRuns(qm: Qm, f: ControlFiles, runs: number): Promise<ControlFigures> {
  const spawn: number[] = [];
  const readiness: number[] = [];
  const firstByte: number[] = [];
  for (let i = 0; i < runs * 2; i++) {
    const streamed = i % 2 === 1;
    await unload(qm, "ctl-cold");
    rmSync(f.readyFile, { force: true });
    rmSync(f.spawnFile, { force: true });
    const sent = epochMs();
    const res = await fetch(`${qm.url}/v1/chat/completions`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: chat("ctl-cold", streamed),
    });
    if (res.status !== 200 || !res.body) throw new Error(`cold run ${i + 1}: HTTP ${res.status}`);
    if (streamed) {
      const reader = res.body.getReader();
      const first = await reader.read();
      if (first.done) throw new Error(`cold run ${i + 1}: empty stream`);
      firstByte.push(epochMs() - sent);
      while (!(await reader.read()).done) {
        // drain to the end
      }
    } else {
      const head = epochMs();
      await res.arrayBuffer();
      const ready = await waitFile(f.readyFile);
      if (ready === null) throw new Error(`cold run ${i + 1}: no ready file`);
      readiness.push(head - (JSON.parse(ready) as { ready_at_ms: number }).ready_at_ms);
    }
    await modelStatus(qm, "ctl-cold");
    const spawned = await waitFile(f.spawnFile);
    if (spawned === null) throw new Error(`cold run ${i + 1}: no spawn stamp`);
    spawn.push(Number.parseFloat(spawned) * 1000 - sent);
  }
  const swaps: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const model = i % 2 === 0 ? "ctl-alpha" : "ctl-beta";
    const t0 = performance.now();
    const res = await fetch(`${qm.url}/v1/chat/completions`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: chat(model, false),
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`swap run ${i + 1}: HTTP ${res.status}`);
    await modelStatus(qm, model);
    // The first load is not a swap: nothing was resident in the pair yet.
    if (i > 0) swaps.push(performance.now() - t0);
  }
  const out = {
    spawn_ms_p50: round(percentile(spawn, 50), 2),
    readiness_ms_p50: round(percentile(readiness, 50), 2),
    readiness_ms_max: round(Math.max(...readiness), 2),
    cold_first_byte_ms_p50: round(percentile(firstByte, 50), 2),
    swap_ms_p50: round(percentile(swaps, 50), 2),
  };
  log(`control: ${JSON.stringify(out)}`);
  return out;
}
