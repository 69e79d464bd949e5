/**
 * The runtime feeds the metrics as its effects happen: a swap and its load time, a failed load,
 * the stop of a model for another's swap; the gauges read its state at scrape time.
 */
import { expect, test } from "bun:test";
import { Runtime } from "../../src/runtime/runtime.ts";
import { QmError } from "../../src/shared/errors.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { fakeServers, settle } from "../runtime/fake-server.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { track } from "../support/track.ts";

/** Metrics are counted only while a listener serves them. */
const SERVED = "[server]\nmetrics_on_api = true\n";

const model = (id: string) =>
  [
    `[models.${id}]`,
    `cmd = "run ${id}"`,
    `proxy = "http://127.0.0.1:9"`,
    "est_vram_gb = 10",
    "",
  ].join("\n");

test("swaps, their load time, failures and evictions; state and in-flight gauges", async () => {
  const cfg = config(
    `${SERVED}[resources]\ngpu_probe = "off"\nvram_budget_gb = 12\n\n${model("a")}${model("b")}`,
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

  const a = acquire("a");
  await settle();
  timers.advance(2500);
  fakes.of("a").ready();
  await settle();
  let text = await rt.metrics.text();
  expect(text).toContain('qm_swaps_total{model="a",result="ok"} 1');
  expect(text).toContain('qm_swap_duration_seconds_sum{model="a"} 2.5');
  expect(text).toContain('qm_model_state{model="a",state="ready"} 1');
  expect(text).toContain('qm_model_inflight{model="a"} 1');
  a.value!.release();

  // "b" does not fit beside "a" in the 12 GB budget: "a" is evicted for it (a `budget`
  // eviction), and b's load fails.
  const b = acquire("b");
  await settle();
  fakes.of("a").stopped();
  await settle();
  fakes.of("b").failStart(new QmError("upstream_failed", "b would not start"));
  await settle();
  expect(b.error).toBeDefined();
  text = await rt.metrics.text();
  expect(text).toContain('qm_evictions_total{model="a",reason="budget"} 1');
  expect(text).toContain('qm_swaps_total{model="b",result="failed"} 1');
  expect(text).toContain('qm_load_failures_total{model="b"} 1');
  expect(text).toContain('qm_model_state{model="b",state="failed"} 1');
  expect(text).toContain("qm_vram_budget_bytes 12884901888");
});

test("the gauges read the runtime's state, never a rendered status, and agree with status", async () => {
  const cfg = config(
    `${SERVED}[resources]\ngpu_probe = "off"\nvram_budget_gb = 24\n\n${model("a")}${model("b")}`,
  );
  const timers = new FakeTimers();
  const fakes = fakeServers();
  const rt = new Runtime(cfg, {
    clock: timers,
    timers,
    log: silentLogger,
    makeProcess: fakes.make,
  });
  const lease = track(rt.acquire(cfg.models.a!, new AbortController().signal));
  await settle();
  fakes.of("a").ready();
  await settle();
  track(rt.acquire(cfg.models.b!, new AbortController().signal));
  await settle();
  const status = rt.status();
  let rendered = 0;
  const render = rt.status.bind(rt);
  rt.status = () => {
    rendered++;
    return render();
  };
  const text = await rt.metrics.text();
  expect(rendered).toBe(0);
  const gb = 2 ** 30;
  expect(text).toContain(`qm_vram_used_bytes ${status.resources.vram_used_gb * gb}`);
  expect(text).toContain(`qm_vram_ceiling_bytes ${status.resources.vram_ceiling_gb * gb}`);
  expect(text).toContain(`qm_queue_depth ${status.queue.depth}`);
  expect(text).toContain(`qm_swaps_in_progress ${status.swaps.length}`);
  for (const m of status.models) {
    expect(text).toContain(`qm_model_state{model="${m.id}",state="${m.state}"} 1`);
    expect(text).toContain(`qm_model_inflight{model="${m.id}"} ${m.inflight}`);
    expect(text).toContain(`qm_model_queued{model="${m.id}"} ${m.queued}`);
  }
  expect(status.models.find((m) => m.id === "a")!.inflight).toBe(1);
  expect(status.swaps.length).toBe(1);
  lease.value!.release();
});
