/** A swap runner over fake processes, a spawn gate the test answers, and recorded events. */
import type { SpawnVerdict } from "../../src/gpu/index.ts";
import { SwapRunner } from "../../src/runtime/swap-runner.ts";
import type { SwapResult } from "../../src/scheduler/types.ts";
import type { QmError } from "../../src/shared/errors.ts";
import { createLogger } from "../../src/shared/log.ts";
import { config } from "../support/config.ts";
import { fakeServers, settle } from "./fake-server.ts";

export function swapHarness(toml: string) {
  const cfg = config(toml);
  const fakes = fakeServers();
  const events: string[] = [];
  const results = new Map<number, SwapResult>();
  const errors: QmError[] = [];
  const lines: string[] = [];
  /** Sleep and wake counts (the metrics' callbacks). */
  const counts: string[] = [];
  const guards: { model: string; evicted: readonly string[] }[] = [];
  const gate = { verdict: { ok: true } as SpawnVerdict, released: 0 };
  const runner = new SwapRunner({
    log: createLogger("info", (l) => lines.push(l)),
    models: () => cfg.models,
    events: {
      swapDone: (id, result) => {
        results.set(id, result);
        events.push(`swapDone ${id} ${result.ok ? "ok" : result.error.code}`);
      },
      stopped: (model) => events.push(`stopped ${model}`),
      slept: (model, asleep) => events.push(`slept ${model} ${asleep}`),
      exited: (model, error) => {
        errors.push(error);
        events.push(`exited ${model} ${error.code}`);
      },
    },
    gpu: {
      guard: async (model, _gb, opts) => {
        guards.push({ model, evicted: opts?.evicted ?? [] });
        return gate.verdict;
      },
      noteReleased: () => {
        gate.released++;
      },
    },
    makeProcess: fakes.make,
    counts: {
      slept: (m, ok) => counts.push(`slept ${m} ${ok}`),
      woke: (m, r) => counts.push(`woke ${m} ${r}`),
    },
  });
  for (const m of Object.values(cfg.models)) runner.add(m);
  return { runner, fakes, events, results, errors, lines, counts, guards, gate };
}

/** Brings model `id` up through a swap of its own. */
export async function bringUp(
  t: ReturnType<typeof swapHarness>,
  id: string,
  swapId: number,
): Promise<void> {
  t.runner.startSwap({ id: swapId, target: id, evict: [] });
  await settle();
  t.fakes.of(id).ready();
  await settle();
}
