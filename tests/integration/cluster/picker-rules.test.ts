/**
 * The endpoint picker's rules (modelled in ./picker.ts from llm-d-router's source) against
 * qm's `/metrics`: its extractor reads every protocol gauge of qm's text without an error, by
 * the names, label names and types it expects; why each name must have one series and no
 * engine's `vllm:*` beside it; and, with the shipped weights (deploy/kubernetes/gateway), where
 * residency and queue cross over — the trade docs/cluster.md explains.
 */
import { describe, expect, test } from "bun:test";
import { QmMetrics } from "../../../src/observe/prometheus.ts";
import { gauge, reading } from "../../observe/readings.ts";
import {
  type EndpointMetrics,
  emptyMetrics,
  extract,
  loraAffinity,
  pick,
  scores,
  type Weights,
} from "./picker.ts";
import { shippedWeights } from "./weights.ts";

const EQUAL: Weights = {
  "lora-affinity-scorer": 1,
  "queue-scorer": 1,
  "kv-cache-utilization-scorer": 1,
};

/** An endpoint's metrics as the picker holds them. */
function endpoint(over: Partial<EndpointMetrics> & { active?: string[]; waiting?: string[] }) {
  const { active = [], waiting = [], ...rest } = over;
  return {
    ...emptyMetrics(),
    updated: true,
    activeModels: new Set(active),
    waitingModels: new Set(waiting),
    ...rest,
  };
}

describe("the extractor on qm's /metrics", () => {
  test("every field read, no error, as qm meant it", async () => {
    const metrics = new QmMetrics({
      gauges: () =>
        reading([
          gauge("chat", { state: "ready", inflight: 2, queued: 1 }, ["gpt-4o-mini"]),
          gauge("coder", { state: "starting", queued: 3 }),
          gauge("embed", { protocol: { names: ["embed"], loadable: true } }),
        ]),
      now: () => 1_700_000_000_000,
    });
    const m = extract(await metrics.text(), emptyMetrics());
    expect(m.errors).toEqual([]);
    expect(m).toMatchObject({
      waitingQueueSize: 4,
      runningRequestsSize: 2,
      kvCacheUsagePercent: 0,
      maxActiveModels: 4,
      updated: true,
    });
    expect([...m.activeModels]).toEqual(["chat", "gpt-4o-mini"]);
    expect([...m.waitingModels]).toEqual(["coder"]);
    // Asked by id or by alias, the model scores as resident; a loading one as loading.
    expect(loraAffinity("gpt-4o-mini", m)).toBe(1);
    expect(loraAffinity("embed", m)).toBe(0.8); // room: 3 listed < max_lora 4
  });

  test("the first series of a gauge, the highest-valued series of the info: why qm has one of each", () => {
    // What a merged engine's own series would do if they kept their names: read instead of qm's.
    const text = [
      "# TYPE vllm:num_requests_waiting gauge",
      'vllm:num_requests_waiting{model="engine"} 0',
      "vllm:num_requests_waiting 9",
      "# TYPE vllm:lora_requests_info gauge",
      'vllm:lora_requests_info{max_lora="1",running_lora_adapters="old",waiting_lora_adapters=""} 100',
      'vllm:lora_requests_info{max_lora="1",running_lora_adapters="new",waiting_lora_adapters=""} 200',
      "",
    ].join("\n");
    const m = extract(text, emptyMetrics());
    expect(m.waitingQueueSize).toBe(0); // the first series, not qm's 9
    expect([...m.activeModels]).toEqual(["new"]);
  });

  test("a gauge written untyped reads 0; a missing family is an error and leaves the last value", () => {
    const first = extract(
      "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 5\n",
      emptyMetrics(),
    );
    expect(first.waitingQueueSize).toBe(5);
    const untyped = extract("vllm:num_requests_waiting 5\n", emptyMetrics());
    expect(untyped.waitingQueueSize).toBe(0);
    const missing = extract("# TYPE other gauge\nother 1\n", first);
    expect(missing.waitingQueueSize).toBe(5);
    expect(missing.errors).toContain('metric family "vllm:num_requests_waiting" not found');
  });
});

describe("residency against queue, with the shipped weights", () => {
  const w = shippedWeights();

  test("the shipped weights are the ones docs/cluster.md argues for", () => {
    expect(w).toEqual({
      "lora-affinity-scorer": 6,
      "queue-scorer": 1,
      "kv-cache-utilization-scorer": 1,
    });
  });

  test("at equal weights one waiting request outweighs residency; shipped, it does not", () => {
    const resident = endpoint({ active: ["m"], maxActiveModels: 1, waitingQueueSize: 1 });
    const room = endpoint({ active: [], maxActiveModels: 1, waitingQueueSize: 0 });
    expect(pick(scores("m", [resident, room], EQUAL))).toBe(1);
    expect(pick(scores("m", [resident, room], w))).toBe(0);
  });

  test("the resident box wins whatever its queue against boxes with room, KV equal", () => {
    for (const q of [1, 5, 50, 500]) {
      const es = [
        endpoint({ active: ["m"], maxActiveModels: 1, waitingQueueSize: q }),
        endpoint({ maxActiveModels: 1, waitingQueueSize: 0 }),
        endpoint({ maxActiveModels: 1, waitingQueueSize: Math.floor(q / 2) }),
      ];
      expect({ q, picked: pick(scores("m", es, w)) }).toEqual({ q, picked: 0 });
    }
  });

  test("the crossover: deepest queue and a KV cache more than 0.2 fuller than a box with room", () => {
    // O - R = -0.2 x 6 + (qR - qO) / (qmax - qmin) + (kvR - kvO): R loses past 1.2.
    const case_ = (kvResident: number) => [
      endpoint({
        active: ["m"],
        maxActiveModels: 1,
        waitingQueueSize: 8,
        kvCacheUsagePercent: kvResident,
      }),
      endpoint({ maxActiveModels: 1, waitingQueueSize: 0, kvCacheUsagePercent: 0.2 }),
    ];
    expect(pick(scores("m", case_(0.35), w))).toBe(0); // 1 + 0.15 < 1.2: residency holds
    expect(pick(scores("m", case_(0.5), w))).toBe(1); // 1 + 0.30 > 1.2: the box with room
  });

  test("among boxes with the model resident, the shorter queue wins", () => {
    const es = [
      endpoint({ active: ["m"], maxActiveModels: 1, waitingQueueSize: 6 }),
      endpoint({ active: ["m"], maxActiveModels: 1, waitingQueueSize: 0 }),
      endpoint({ maxActiveModels: 1, waitingQueueSize: 0 }),
    ];
    expect(pick(scores("m", es, w))).toBe(1);
  });

  test("nowhere resident: room over a box loading it, a box loading it over one that would evict", () => {
    const room = endpoint({ active: ["x"], maxActiveModels: 2 });
    const loading = endpoint({ waiting: ["m"], maxActiveModels: 1 });
    const full = endpoint({ active: ["y"], maxActiveModels: 1 });
    const got = scores("m", [room, loading, full], w);
    expect(got.map((s) => Math.round(s * 100) / 100)).toEqual([6.8, 5.6, 2]);
  });

  test("equal scores take turns (the max-score picker's rotation)", () => {
    const a = endpoint({ maxActiveModels: 1 });
    const totals = scores("m", [a, a, a], w);
    expect([0, 1, 2, 3].map((turn) => pick(totals, turn))).toEqual([0, 1, 2, 0]);
  });
});
