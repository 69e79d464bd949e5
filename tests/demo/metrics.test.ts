/**
 * The demo upstream's `GET /metrics` (`--metrics`): llama-server-like `llamacpp:` series that
 * qm's parser reads — a counter, a gauge and a histogram over the requests it answered — and a
 * 501 without the flag, as llama-server answers.
 */
import { afterEach, expect, test } from "bun:test";
import { DEFAULT_DEMO_OPTIONS, type DemoOptions, parseDemoFlags } from "../../src/demo/flags.ts";
import { type DemoServer, startDemoServer } from "../../src/demo/server.ts";
import { parseExposition } from "../../src/observe/exposition.ts";

const servers: DemoServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

const clockMs = 0;
function demo(over: Partial<DemoOptions> = {}): DemoServer {
  const s = startDemoServer(
    { ...DEFAULT_DEMO_OPTIONS, tokenMs: 0, tokens: 2, ...over },
    { crash: () => {}, now: () => clockMs },
  );
  servers.push(s);
  return s;
}

const chat = (s: DemoServer) =>
  fetch(`${s.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "x", messages: [{ role: "user", content: "hi" }] }),
  }).then((r) => r.text());

test("--metrics is a flag without a value", () => {
  expect(parseDemoFlags(["--metrics"])).toMatchObject({ kind: "run", options: { metrics: true } });
  expect(parseDemoFlags(["--metrics=1"])).toEqual({
    kind: "error",
    message: "--metrics takes no value",
  });
});

test("with --metrics: a counter, a gauge and a histogram over the answered requests", async () => {
  const s = demo({ metrics: true });
  await chat(s);
  await chat(s);
  const res = await fetch(`${s.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain; version=0.0.4");
  const families = parseExposition(await res.text());
  expect(families.map((f) => [f.name, f.type])).toEqual([
    ["llamacpp:requests_total", "counter"],
    ["llamacpp:requests_processing", "gauge"],
    ["llamacpp:request_duration_seconds", "histogram"],
  ]);
  expect(families[0]!.samples[0]!.value).toBe(2);
  expect(families[1]!.samples[0]!.value).toBe(0);
  const count = families[2]!.samples.find((x) => x.name.endsWith("_count"));
  const inf = families[2]!.samples.find((x) =>
    x.labels.some(([k, v]) => k === "le" && v === "+Inf"),
  );
  expect([count?.value, inf?.value]).toEqual([2, 2]);
  expect((await fetch(`${s.url}/metrics`, { method: "POST" })).status).toBe(405);
});

test("without --metrics: 501, as llama-server answers", async () => {
  const s = demo();
  const res = await fetch(`${s.url}/metrics`);
  expect(res.status).toBe(501);
  expect(await res.text()).toContain("--metrics");
});
