/**
 * `event: load` while a model loads: at once when its log shows a new stage, every 2 s while it
 * is still loading, none once it is ready, and none built while nobody listens.
 */
import { describe, expect, test } from "bun:test";
import type { QmEvent } from "../../src/api/gateway.ts";
import { LOAD_EVENT_MS } from "../../src/runtime/load-events.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { track } from "../support/track.ts";
import { fakeServers, settle } from "./fake-server.ts";

const TOML = `[resources]\ngpu_probe = "off"\n[models.m]\ncmd = "llama-server -m m.gguf --port \${PORT}"\nproxy = "http://127.0.0.1:9"\n`;
const TENSORS = "0.03.272.046 I load_tensors: loading model tensors, this can take a while...";

function setup() {
  const cfg = config(TOML);
  const timers = new FakeTimers();
  const fakes = fakeServers();
  const rt = new Runtime(cfg, {
    clock: timers,
    timers,
    log: silentLogger,
    makeProcess: fakes.make,
  });
  return { cfg, timers, fakes, rt };
}

const loads = (seen: QmEvent[]) => seen.filter((e) => e.type === "load");

describe("event: load", () => {
  test("a new stage at once, then every 2 s, and none after ready", async () => {
    const { cfg, timers, fakes, rt } = setup();
    const seen: QmEvent[] = [];
    rt.subscribe((e) => seen.push(e));
    const lease = track(rt.acquire(cfg.models.m!, new AbortController().signal));
    await settle();
    expect(loads(seen)).toEqual([]);
    rt.modelLine("m", TENSORS);
    expect(loads(seen)).toEqual([
      {
        type: "load",
        model: "m",
        elapsed_ms: 0,
        expected_ms: null,
        progress: 0.15,
        stage: "loading tensors",
      },
    ]);
    // Another line of the same stage says nothing new.
    rt.modelLine("m", "0.03.272.100 I load_tensors: CPU model buffer size = 18 MiB");
    expect(loads(seen)).toHaveLength(1);
    timers.advance(LOAD_EVENT_MS);
    expect(loads(seen)).toHaveLength(2);
    expect(loads(seen)[1]).toMatchObject({ elapsed_ms: LOAD_EVENT_MS, stage: "loading tensors" });
    timers.advance(LOAD_EVENT_MS);
    expect(loads(seen)).toHaveLength(3);
    fakes.of("m").ready();
    await settle();
    expect(lease.value).toBeDefined();
    timers.advance(LOAD_EVENT_MS * 3);
    expect(loads(seen)).toHaveLength(3);
  });

  test("nothing is published while nobody listens", async () => {
    const { cfg, timers, fakes, rt } = setup();
    const before = rt.lastEventId;
    const lease = track(rt.acquire(cfg.models.m!, new AbortController().signal));
    await settle();
    const afterStart = rt.lastEventId;
    rt.modelLine("m", TENSORS);
    timers.advance(LOAD_EVENT_MS * 2);
    expect(rt.lastEventId).toBe(afterStart);
    expect(afterStart).toBeGreaterThan(before);
    fakes.of("m").ready();
    await settle();
    expect(lease.value).toBeDefined();
  });
});
