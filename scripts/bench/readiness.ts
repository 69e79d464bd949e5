/**
 * Section (c): the readiness gap — from the upstream becoming healthy to the first byte qm
 * forwards to a client that was waiting for the load.
 *
 * Each run unloads the model, then sends one non-streamed request, which makes qm start the
 * stamp upstream (with a load delay, so the request really waits). The upstream writes when
 * its load ended and when it first answered /health with 200; the client notes when `fetch`
 * resolved (the response head: the first bytes qm forwarded). Non-streamed, because a
 * streamed request gets qm's `: qm-status` placeholder bytes before the model is ready.
 *
 * The headline gap is measured from the end of the load, so it includes qm's health-poll
 * interval; the gap from the first 200 probe is reported beside it (qm's own reaction time).
 */
import { rmSync } from "node:fs";
import { modelStatus, type Qm, unload } from "./qm.ts";
import { epochMs, log, percentile, round } from "./util.ts";

interface Ready {
  ready_at_ms: number;
  first_200_ms: number;
}

async function readReadyFile(path: string): Promise<Ready | null> {
  // The upstream writes it just after answering the probe; allow it a moment.
  for (let w = 0; w < 100; w++) {
    const f = Bun.file(path);
    if (await f.exists()) return (await f.json()) as Ready;
    await Bun.sleep(10);
  }
  return null;
}

export async function readinessRuns(qm: Qm, model: string, readyFile: string, runs: number) {
  const fromReady: number[] = [];
  const fromFirst200: number[] = [];
  const body = JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] });
  for (let i = 0; i < runs; i++) {
    await unload(qm, model);
    rmSync(readyFile, { force: true });
    const res = await fetch(`${qm.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const firstByte = epochMs();
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`readiness run ${i + 1}: HTTP ${res.status}`);
    // Remember the new upstream's process group, for cleanup.
    await modelStatus(qm, model);
    const ready = await readReadyFile(readyFile);
    if (ready === null)
      throw new Error(`readiness run ${i + 1}: the upstream wrote no ${readyFile}`);
    fromReady.push(firstByte - ready.ready_at_ms);
    fromFirst200.push(firstByte - ready.first_200_ms);
    log(
      `readiness run ${i + 1}: first byte ${round(firstByte - ready.ready_at_ms, 2)} ms after ` +
        `healthy, ${round(firstByte - ready.first_200_ms, 2)} ms after the first 200 probe`,
    );
  }
  return {
    p50: round(percentile(fromReady, 50), 2),
    max: round(Math.max(...fromReady), 2),
    runs: fromReady.length,
    from_first_200_probe: {
      p50: round(percentile(fromFirst200, 50), 2),
      max: round(Math.max(...fromFirst200), 2),
    },
  };
}
