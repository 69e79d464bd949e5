/**
 * The activity and metrics routes over an `ObserveGateway` alone: a lookup of the models, the
 * activity log and the metrics — nothing of the scheduler, the exchange or the control routes.
 */
import { describe, expect, test } from "bun:test";
import {
  activityRoutes,
  metricsHandler,
  requestRoute,
} from "../../../src/api/control/observe-routes.ts";
import type { ObserveGateway } from "../../../src/api/gateway.ts";
import { modelIdFor } from "../../../src/config/aliases.ts";
import { ActivityLog } from "../../../src/observe/activity.ts";
import { QmMetrics } from "../../../src/observe/prometheus.ts";
import type { RequestRecord } from "../../../src/observe/record.ts";
import { silentLogger } from "../../../src/shared/log.ts";
import { config } from "../../support/config.ts";

function observeGateway(): ObserveGateway {
  const cfg = config(`[models.m]\ncmd = "run m"\nproxy = "http://127.0.0.1:9"\naliases = ["mm"]\n`);
  return {
    config: cfg,
    resolve: (name) => {
      const id = modelIdFor(cfg, name);
      return id === undefined ? undefined : cfg.models[id];
    },
    activity: new ActivityLog(4),
    metrics: new QmMetrics({
      gauges: () => ({
        version: "1.2.3",
        uptimeS: 7,
        models: [{ id: "m", state: "ready", inflight: 1, queued: 0, leases: 0 }],
        queueDepth: 0,
        swapsInProgress: 0,
        vram: { budgetGb: 0, ceilingGb: 0, usedGb: 0 },
        gpu: null,
        gpuReadingAgeS: null,
        peers: [],
      }),
    }),
  };
}

const record = (model: string): RequestRecord => ({
  id: 0,
  time: 1_700_000_000_000,
  key: "anonymous",
  model,
  api: "openai",
  status: 200,
  duration_ms: 12,
  wait_ms: 3,
  ttft_ms: null,
  prompt_tokens: 5,
  completion_tokens: 2,
  cached_tokens: null,
  finish_reason: "stop",
  answered: true,
  swap: false,
});

const get = (path: string) => new Request(`http://localhost${path}`);

describe("the activity and metrics routes", () => {
  test("/api/requests by an alias, /api/requests/{id}, and a 404 past the log", async () => {
    const gw = observeGateway();
    gw.activity.push(record("m"));
    gw.activity.push(record("other"));
    const list = await activityRoutes(gw).handle(get("/api/requests?model=mm"));
    expect(
      ((await list.json()) as { requests: RequestRecord[] }).requests.map((r) => r.id),
    ).toEqual([1]);
    const one = await requestRoute(gw).handle(get("/api/requests/2"));
    expect(await one.json()).toMatchObject({ id: 2, model: "other", capture: null });
    expect((await requestRoute(gw).handle(get("/api/requests/9"))).status).toBe(404);
  });

  test("the metrics listener's handler serves the gauges of the reading", async () => {
    const handle = metricsHandler(observeGateway(), silentLogger, {
      allowedHosts: [],
      loopback: true,
    });
    const text = await (await handle(get("/metrics"))).text();
    expect(text).toContain('qm_model_state{model="m",state="ready"} 1');
    expect(text).toContain('qm_model_inflight{model="m"} 1');
    expect(text).toContain('qm_info{version="1.2.3"} 1');
    expect((await handle(get("/other"))).status).toBe(404);
  });
});
