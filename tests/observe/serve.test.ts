/**
 * The compiled qm with `server.metrics_listen` (port 0): its own listener serves the scrape of
 * the requests the API listener served, and nothing else.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, until } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(20_000);

let qm: QmServer;
let metrics: string;

beforeAll(async () => {
  qm = await serve(
    `[server]\nmetrics_listen = "127.0.0.1:0"\n\n[models.m]\ncmd = "\${demo} --tokens 3"\n`,
  );
  metrics = await until(
    async () => /metrics on (http:\/\/\S+)\/metrics/.exec(qm.log())?.[1] ?? "",
    (url) => url !== "",
    5000,
  );
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

test("a request on the API listener shows in the metrics listener's scrape", async () => {
  const res = await chat(qm.url, "m");
  expect(res.status).toBe(200);
  await res.text();
  const scrape = await fetch(`${metrics}/metrics`);
  expect(scrape.status).toBe(200);
  const text = await scrape.text();
  expect(text).toContain('qm_requests_total{model="m",api="openai",status="200"} 1');
  expect(text).toContain('qm_swaps_total{model="m",result="ok"} 1');
  expect(text).toContain('qm_model_state{model="m",state="ready"} 1');
  const other = await fetch(`${metrics}/v1/models`);
  expect(other.status).toBe(404);
  expect(((await other.json()) as { error: { code: string } }).error.code).toBe("not_found");
  // The API listener has no /metrics unless metrics_on_api says so.
  expect((await fetch(`${qm.url}/metrics`)).status).toBe(404);
});
