/**
 * The `key` label: per key × model counters of requests, tokens and wait, and each configured
 * key's waiting and in-flight requests at the scrape. Label values are key names only (the
 * configured ones, `admin`, `anonymous`), never a secret.
 */
import { describe, expect, test } from "bun:test";
import { KeyTable } from "../../src/keys/table.ts";
import type { RequestRecord } from "../../src/observe/record.ts";
import { settle } from "../runtime/fake-server.ts";
import { HEAD, model, runtimeHarness } from "../runtime/harness.ts";

const rec = (key: string, over: Partial<RequestRecord> = {}): RequestRecord => ({
  id: 0,
  time: 1,
  key,
  model: "m",
  api: "openai",
  status: 200,
  answered: true,
  wait_ms: 1500,
  swap: false,
  duration_ms: 10,
  ttft_ms: null,
  prompt_tokens: 10,
  completion_tokens: 5,
  cached_tokens: 2,
  finish_reason: "stop",
  ...over,
});

const CONFIG = `[server]\nmetrics_on_api = true\napi_keys = ["sk-root"]\n[keys.alice]\nkey = "sk-alice"\nmax_concurrency = 1\n[keys.ci]\nkey = "sk-ci"\n${HEAD}${model("m", "concurrency_limit = 1")}`;

describe("the key label", () => {
  test("requests, tokens and wait per key and model; waiting and in flight per configured key", async () => {
    const t = runtimeHarness(CONFIG);
    t.rt.record(rec("alice"));
    t.rt.record(rec("alice", { prompt_tokens: null, wait_ms: null }));
    t.rt.record(rec("ci", { completion_tokens: 7 }));
    const alice = KeyTable.of(t.rt.config).lookup("sk-alice")!;
    const served = t.acquire("m", { key: alice });
    await settle();
    t.fakes.of("m").ready();
    await settle();
    expect(served.value).toBeDefined();
    t.acquire("m", { key: alice });
    await settle();
    const text = await t.rt.metrics.text();
    const lines = text.split("\n").filter((l) => l.startsWith("qm_key_"));
    expect(lines).toEqual([
      'qm_key_requests_total{key="alice",model="m"} 2',
      'qm_key_requests_total{key="ci",model="m"} 1',
      'qm_key_tokens_total{key="alice",model="m",kind="prompt"} 10',
      'qm_key_tokens_total{key="alice",model="m",kind="completion"} 10',
      'qm_key_tokens_total{key="alice",model="m",kind="cached"} 4',
      'qm_key_tokens_total{key="ci",model="m",kind="prompt"} 10',
      'qm_key_tokens_total{key="ci",model="m",kind="completion"} 7',
      'qm_key_tokens_total{key="ci",model="m",kind="cached"} 2',
      'qm_key_wait_seconds_total{key="alice",model="m"} 1.5',
      'qm_key_wait_seconds_total{key="ci",model="m"} 1.5',
      'qm_key_waiting{key="admin"} 0',
      'qm_key_waiting{key="alice"} 1',
      'qm_key_waiting{key="ci"} 0',
      'qm_key_inflight{key="admin"} 0',
      'qm_key_inflight{key="alice"} 1',
      'qm_key_inflight{key="ci"} 0',
    ]);
    expect(text).not.toContain("sk-");
  });

  test("with no key configured, requests are anonymous", async () => {
    const t = runtimeHarness(`[server]\nmetrics_on_api = true\n${HEAD}${model("m")}`);
    t.rt.record(rec("anonymous"));
    const text = await t.rt.metrics.text();
    expect(text).toContain('qm_key_requests_total{key="anonymous",model="m"} 1');
    expect(text).toContain('qm_key_waiting{key="anonymous"} 0');
  });
});
