/**
 * The model server protocol's gauges from the runtime's own state (src/runtime/observing.ts):
 * a model's names are its id and exact aliases (patterns cannot be listed; an unlisted model
 * is counted but not named); a stopped model is room when the policy would load it now
 * without evicting anything; requests waiting for a load count as waiting.
 */
import { expect, test } from "bun:test";
import { parseExposition } from "../../src/observe/exposition.ts";
import { PROTOCOL_NAMES } from "../../src/observe/model-server.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { fakeServers, settle } from "../runtime/fake-server.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { track } from "../support/track.ts";

/** Metrics are counted only while a listener serves them. */
const SERVED = "[server]\nmetrics_on_api = true\n";

const model = (id: string, extra = "") =>
  `[models.${id}]\ncmd = "run ${id}"\nproxy = "http://127.0.0.1:9"\nest_vram_gb = 10\n${extra}\n`;

async function protocol(rt: Runtime) {
  const families = parseExposition(await rt.metrics.text());
  const one = (name: string) => families.find((f) => f.name === name)!.samples[0]!;
  return {
    waiting: one(PROTOCOL_NAMES.waiting).value,
    running: one(PROTOCOL_NAMES.running).value,
    info: Object.fromEntries(one(PROTOCOL_NAMES.info).labels),
  };
}

test("names, room and waiting requests, as the runtime holds them", async () => {
  const cfg = config(
    `${SERVED}[resources]\ngpu_probe = "off"\nvram_budget_gb = 24\n\n` +
      model("a", 'aliases = ["alpha", "claude-*"]') +
      model("b") +
      model("c") +
      model("hidden", "unlisted = true"),
  );
  const timers = new FakeTimers();
  const fakes = fakeServers();
  const rt = new Runtime(cfg, {
    clock: timers,
    timers,
    log: silentLogger,
    makeProcess: fakes.make,
  });
  const acquire = (id: string) => track(rt.acquire(cfg.models[id]!, new AbortController().signal));

  // Nothing resident: every listed model fits (10 of 24 GB) on its own.
  expect(await protocol(rt)).toEqual({
    waiting: 0,
    running: 0,
    info: { max_lora: "3", running_lora_adapters: "", waiting_lora_adapters: "" },
  });

  const first = acquire("a");
  await settle();
  // a is loading, its request waiting for it; b and c still fit beside it.
  expect(await protocol(rt)).toEqual({
    waiting: 1,
    running: 0,
    info: { max_lora: "4", running_lora_adapters: "", waiting_lora_adapters: "a,alpha" },
  });
  fakes.of("a").ready();
  await settle();
  expect(await protocol(rt)).toEqual({
    waiting: 0,
    running: 1,
    info: { max_lora: "4", running_lora_adapters: "a,alpha", waiting_lora_adapters: "" },
  });

  // b loads beside a (20 of 24 GB); c would then need an eviction: no room left.
  const second = acquire("b");
  await settle();
  fakes.of("b").ready();
  await settle();
  expect(await protocol(rt)).toEqual({
    waiting: 0,
    running: 2,
    info: { max_lora: "3", running_lora_adapters: "a,alpha,b", waiting_lora_adapters: "" },
  });

  // The unlisted model's request counts, its name is never shown.
  first.value!.release();
  second.value!.release();
  track(rt.acquire(cfg.models.hidden!, new AbortController().signal));
  await settle();
  const p = await protocol(rt);
  expect(p.waiting).toBe(1);
  expect(p.info.waiting_lora_adapters).toBe("");
  expect(JSON.stringify(p.info)).not.toContain("hidden");
});
