/**
 * The endpoint picker's rules (./picker.ts) over three real `qm serve` processes, each with the
 * same three demo models in one swap group and a different one preloaded, `metrics_on_api =
 * "open"` behind an API key: the picker scrapes each box's API port without a key, as the real
 * one does. What it reads agrees with each box's `/api/status` while models load, serve and
 * swap; each model goes to the box where it is resident 8 times of 8, by id and by alias; a
 * box keeps its model's requests while its queue is the deepest; and a model moved from one
 * box to another is followed within 5 s.
 *
 * Not the real picker: llm-d-router's Go module is not on the module proxy this machine
 * reaches, so its rules are modelled (docs/cluster.md says what that leaves unproven).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { StatusJson } from "../../../src/api/status-json.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../../support/binary.ts";
import { serve, until } from "../../support/e2e.ts";
import type { QmServer } from "../../support/qm-process.ts";
import { Endpoint, Picker } from "./picker.ts";
import { shippedWeights } from "./weights.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);
setDefaultTimeout(60_000);

const KEY = { authorization: "Bearer k" };
const MODELS = ["alpha", "beta", "gamma"] as const;

/** A box with all three models, `resident` preloaded; alpha answers slowly, one at a time. */
function box(resident: string): string {
  return `[server]
metrics_on_api = "open"
api_keys = ["k"]
preload = ["${resident}"]

[groups.gpu]
members = ["alpha", "beta", "gamma"]
swap = true

[models.alpha]
cmd = "\${demo} --tokens 20 --token-ms 100"
aliases = ["alpha-chat"]
concurrency_limit = 1

[models.beta]
cmd = "\${demo} --tokens 3 --load-delay-ms 3000"
aliases = ["beta-chat"]

[models.gamma]
cmd = "\${demo} --tokens 3"
aliases = ["gamma-chat"]
`;
}

const boxes: QmServer[] = [];
let picker: Picker;
const resident: Record<string, number> = { alpha: 0, beta: 1, gamma: 2 };

async function statusOf(i: number): Promise<StatusJson> {
  const res = await fetch(`${boxes[i]!.url}/api/status`, { headers: KEY });
  return (await res.json()) as StatusJson;
}

const stateOf = async (i: number, model: string) =>
  (await statusOf(i)).models.find((m) => m.id === model)?.state;

beforeAll(async () => {
  boxes.push(...(await Promise.all(MODELS.map((m) => serve(box(m))))));
  picker = new Picker(
    boxes.map((b, i) => new Endpoint(`box-${i}`, b.url)),
    shippedWeights(),
  );
});

afterAll(async () => {
  await Promise.all(boxes.map((b) => b.stop()));
});

/** The chat a client sends through the gateway: to the box the picker chose, with its key. */
function send(i: number, model: string) {
  return fetch(`${boxes[i]!.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...KEY },
    body: JSON.stringify({ model, max_tokens: 3, messages: [{ role: "user", content: "hi" }] }),
  });
}

describe("three qm boxes behind the picker's rules", () => {
  test("while a model loads, the picker reads it as waiting; ready, as running, as status says", async () => {
    // beta takes 3 s to load on box 1 (preloaded at start): caught loading, then ready.
    await until(
      async () => {
        await picker.poll();
        return [await stateOf(1, "beta"), [...picker.endpoints[1]!.metrics.waitingModels]];
      },
      ([state, waiting]) => state === "starting" && (waiting as string[]).includes("beta"),
      10_000,
    );
    for (const [model, i] of Object.entries(resident)) {
      await until(
        async () => stateOf(i, model),
        (s) => s === "ready",
        20_000,
      );
    }
    await picker.poll();
    for (const [model, i] of Object.entries(resident)) {
      const m = picker.endpoints[i]!.metrics;
      expect(picker.endpoints[i]!.lastError).toBeNull();
      expect([...m.activeModels].sort()).toEqual([model, `${model}-chat`]);
      expect(m.waitingModels.size).toBe(0);
      // Nothing else fits beside it in a swap group: no room.
      expect(m.maxActiveModels).toBe(2);
      const st = await statusOf(i);
      expect(m.waitingQueueSize).toBe(st.models.reduce((n, x) => n + x.queued, 0));
      expect(m.runningRequestsSize).toBe(st.models.reduce((n, x) => n + x.inflight, 0));
      // The pool's /v1/models: each model's status.value is the state /api/status shows.
      const listed = (await (
        await fetch(`${boxes[i]!.url}/v1/models`, { headers: KEY })
      ).json()) as {
        data: { id: string; status: { value: string } }[];
      };
      for (const x of st.models) {
        expect(listed.data.find((d) => d.id === x.id)?.status.value).toBe(x.state);
      }
    }
  });

  test("each model goes to the box where it is resident, 8 times of 8, by id and by alias", async () => {
    for (const model of MODELS) {
      for (const name of [model, `${model}-chat`]) {
        const chosen: number[] = [];
        for (let i = 0; i < 8; i++) {
          await picker.poll();
          const at = picker.endpoints.indexOf(picker.choose(name));
          chosen.push(at);
          const res = await send(at, name);
          expect(res.status).toBe(200);
          expect(res.headers.get("x-qm-model-loaded")).toBe("true");
          await res.text();
        }
        expect({ name, chosen }).toEqual({ name, chosen: Array(8).fill(resident[model]) });
      }
    }
  });

  test("the resident box keeps its model's requests while its queue is the deepest", async () => {
    // alpha answers one at a time, each for 2 s: three more wait on box 0.
    const pending = [0, 1, 2, 3].map(() =>
      fetch(`${boxes[0]!.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...KEY },
        body: JSON.stringify({ model: "alpha", messages: [{ role: "user", content: "hi" }] }),
      }).then((r) => r.text()),
    );
    await until(
      async () => {
        await picker.poll();
        return picker.endpoints[0]!.metrics.waitingQueueSize;
      },
      (q) => q >= 2,
    );
    const queues = picker.endpoints.map((e) => e.metrics.waitingQueueSize);
    expect(Math.max(...queues)).toBe(queues[0]!);
    expect(queues.slice(1)).toEqual([0, 0]);
    expect(picker.endpoints.indexOf(picker.choose("alpha"))).toBe(0);
    await Promise.all(pending);
  });

  test("a model moved from one box to another is followed within 5 s", async () => {
    const post = (i: number, path: string) =>
      fetch(`${boxes[i]!.url}${path}`, { method: "POST", headers: KEY });
    expect((await post(0, "/api/models/alpha/unload")).status).toBeLessThan(300);
    expect((await post(1, "/api/models/alpha/load")).status).toBeLessThan(300);
    await until(
      async () => stateOf(1, "alpha"),
      (s) => s === "ready",
      20_000,
    );
    const movedAt = Date.now();
    let followedAfter = -1;
    while (Date.now() - movedAt < 5000) {
      await picker.poll();
      if (picker.endpoints.indexOf(picker.choose("alpha")) === 1) {
        followedAfter = Date.now() - movedAt;
        break;
      }
      await Bun.sleep(50); // the picker's refresh interval (--refresh-metrics-interval)
    }
    expect(followedAfter).toBeGreaterThanOrEqual(0);
    expect(followedAfter).toBeLessThan(5000);
    // Box 1 swapped beta out for alpha; box 0 has room again (nothing resident there).
    expect([...picker.endpoints[1]!.metrics.activeModels].sort()).toEqual(["alpha", "alpha-chat"]);
    expect(picker.endpoints[0]!.metrics.activeModels.size).toBe(0);
    expect(picker.endpoints[0]!.metrics.maxActiveModels).toBeGreaterThan(0);
    // beta is resident nowhere now: the box with room gets it, not one that would evict.
    expect(picker.endpoints.indexOf(picker.choose("beta"))).toBe(0);
    const res = await send(1, "alpha");
    expect(res.headers.get("x-qm-model-loaded")).toBe("true");
    await res.text();
  });
});
