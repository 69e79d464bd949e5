/**
 * The compiled qm over two demo upstreams started with `--metrics`: its `/metrics` carries both
 * servers' `llamacpp:` series, each labelled with its model, one family per name; a third model
 * with `scrape_upstream_metrics = false` and a stopped one are not scraped.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, until } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";
import { colonLint } from "./lint.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(30_000);

let qm: QmServer;
let metrics: string;

beforeAll(async () => {
  qm = await serve(`[server]
metrics_listen = "127.0.0.1:0"

[groups.all]
members = ["a", "b", "off", "idle"]
swap = false
exclusive = false

[models.a]
cmd = "\${demo} --tokens 3 --metrics"
scrape_upstream_metrics = true
[models.b]
cmd = "\${demo} --tokens 3 --metrics"
scrape_upstream_metrics = true
[models.off]
cmd = "\${demo} --tokens 3 --metrics"
[models.idle]
cmd = "\${demo} --tokens 3 --metrics"
scrape_upstream_metrics = true
`);
  metrics = await until(
    async () => /metrics on (http:\/\/\S+)\/metrics/.exec(qm.log())?.[1] ?? "",
    (url) => url !== "",
    5000,
  );
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

test("both ready servers' series, labelled by model, merged after qm's own", async () => {
  for (const [model, n] of [
    ["a", 2],
    ["b", 1],
    ["off", 1],
  ] as const) {
    for (let i = 0; i < n; i++) {
      const res = await chat(qm.url, model);
      expect(res.status).toBe(200);
      await res.text();
    }
  }
  const res = await fetch(`${metrics}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text).toContain('llamacpp:requests_total{model="a"} 2');
  expect(text).toContain('llamacpp:requests_total{model="b"} 1');
  expect(text).toContain('llamacpp:request_duration_seconds_count{model="a"} 2');
  expect(text).toContain('llamacpp:requests_processing{model="b"} 0');
  expect(text.match(/^# TYPE llamacpp:requests_total counter$/gm)).toHaveLength(1);
  expect(text.match(/^# TYPE llamacpp:request_duration_seconds histogram$/gm)).toHaveLength(1);
  // "off" is a demo, not llama-server: "auto" leaves it out; "idle" never loaded.
  expect(text).not.toMatch(/^llamacpp:[^{]*\{model="(off|idle)"/m);
  expect(text).toMatch(/^qm_upstream_scrape_duration_seconds\{model="a"\} /m);
  expect(text).not.toContain("qm_upstream_scrape_errors_total{");

  if (Bun.which("promtool")) {
    const dir = mkdtempSync(join(tmpdir(), "qm-metrics-"));
    try {
      const file = join(dir, "scrape.txt");
      writeFileSync(file, text);
      const p = Bun.spawnSync(["sh", "-c", `promtool check metrics < ${file} 2>&1`]);
      const complaints = p.stdout.toString().split("\n").filter(Boolean);
      expect(p.exitCode === 0 || p.exitCode === 3).toBe(true);
      // llama-server's names have colons, which promtool's lint flags, and so do the model
      // server protocol's (vLLM's names); nothing else.
      expect(complaints.filter((l) => !colonLint(l))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});
