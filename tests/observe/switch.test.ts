/**
 * The observability switch: `[activity] enabled = false` keeps no log and publishes no
 * `request` event; requests are counted in the metrics only when a listener serves them; with
 * neither, no record is built and no answer is scanned for its usage.
 */
import { describe, expect, test } from "bun:test";
import { Observer } from "../../src/api/exchange/observer.ts";
import type { QmEvent } from "../../src/api/gateway.ts";
import type { RequestRecord } from "../../src/observe/record.ts";
import { OPENAI_TOOL_CALLS } from "../../src/proxy/end-scan.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { config } from "../support/config.ts";
import { useFakeFetch } from "../support/fake-fetch.ts";
import { fakeGateway, modelToml } from "../support/fake-gateway.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { appOf, post } from "../support/in-process.ts";
import { completion } from "../support/openai-answers.ts";

const up = useFakeFetch();
const enc = new TextEncoder();

function runtime(toml: string): Runtime {
  const cfg = config(`[resources]\ngpu_probe = "off"\n${toml}\n${modelToml("m", up)}`);
  const timers = new FakeTimers();
  return new Runtime(cfg, { clock: timers, timers, log: silentLogger });
}

const rec = (): RequestRecord => ({
  id: 0,
  time: 1,
  key: "anonymous",
  model: "m",
  api: "openai",
  status: 200,
  answered: true,
  wait_ms: 0,
  swap: false,
  duration_ms: 1,
  ttft_ms: null,
  prompt_tokens: 3,
  completion_tokens: 4,
  cached_tokens: null,
  finish_reason: "stop",
});

async function counted(rt: Runtime): Promise<boolean> {
  return (await rt.metrics.text()).includes('qm_requests_total{model="m"');
}

describe("the runtime", () => {
  test("activity off: no log, no `request` event; with no metrics listener, nothing records", async () => {
    const rt = runtime("[activity]\nenabled = false");
    expect(rt.recording).toBe(false);
    const events: QmEvent[] = [];
    rt.subscribe((e) => events.push(e));
    rt.record(rec());
    expect(rt.activity.list()).toEqual([]);
    expect(events.filter((e) => e.type === "request")).toEqual([]);
    expect(await counted(rt)).toBe(false);
  });

  test("activity off, metrics on a listener: counted, not kept", async () => {
    for (const server of ["metrics_on_api = true", 'metrics_listen = "127.0.0.1:0"']) {
      const rt = runtime(`[server]\n${server}\n[activity]\nenabled = false`);
      expect(rt.recording).toBe(true);
      rt.record(rec());
      expect(await counted(rt)).toBe(true);
      expect(rt.activity.list()).toEqual([]);
    }
  });

  test("activity on (the default), no metrics listener: kept and published, not counted", async () => {
    const rt = runtime("");
    expect(rt.recording).toBe(true);
    const events: QmEvent[] = [];
    rt.subscribe((e) => events.push(e));
    rt.record(rec());
    expect(rt.activity.list()).toHaveLength(1);
    expect(events.filter((e) => e.type === "request")).toHaveLength(1);
    expect(await counted(rt)).toBe(false);
  });

  test("activity off leaves no capture store either", () => {
    expect(runtime("[activity]\nenabled = false\ncapture = true").captures).toBeNull();
    expect(runtime("[activity]\ncapture = true").captures).not.toBeNull();
  });
});

describe("nobody reading", () => {
  test("no record is built for a request", async () => {
    const gw = fakeGateway(`[server]\nlog_level = "error"\n${modelToml("m", up)}`);
    gw.states.m = "ready";
    gw.recording = false;
    up.answer = () => completion({ content: "Hello" }, "stop");
    const res = await post(appOf(gw), "/v1/chat/completions", {
      model: "m",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(200);
    expect(
      ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message
        .content,
    ).toBe("Hello");
    await gw.leases[0]!.released;
    expect(gw.records).toEqual([]);
  });

  test("the observer reads no usage, yet still sees a tool-call end", () => {
    const answer = enc.encode(
      '{"choices":[{"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}',
    );
    const off = new Observer(OPENAI_TOOL_CALLS);
    off.ignoreUsage();
    off.chunk(answer);
    expect([off.usage.prompt, off.usage.finishReason, off.toolCalls]).toEqual([null, null, true]);
    const on = new Observer(null);
    on.chunk(answer);
    expect([on.usage.prompt, on.usage.finishReason]).toEqual([5, "tool_calls"]);
  });
});
