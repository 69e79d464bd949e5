/**
 * The dashboard's charts in Chromium, against the compiled `dist/qm` with demo models and a fake
 * nvidia-smi: memory over time and the residency timeline on the Hardware page, request rate
 * and TTFT on the Performance page — each an SVG at least 300 px wide in a 1280 px window, drawn
 * from `/api/history` and the activity, in the light and the dark theme. Waits are on
 * conditions, never on a clock. Without Chromium the tests skip.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import type { StatusJson } from "../../src/api/status-json.ts";
import type { HistoryJson } from "../../src/gpu/history.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { serve, until } from "../support/e2e.ts";
import { fakeSmi } from "../support/fake-smi.ts";
import type { QmServer } from "../support/qm-process.ts";
import { chromiumFor, launchChromium, watchedPage } from "./chromium.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

const HAVE_CHROMIUM = chromiumFor("tests/ui/charts-browser.test.ts");
const KEY = "charts-key";
const SHOTS = join(import.meta.dir, "__shots__");
const STEP_MS = 30_000;

// a and b do not fit together under the budget: loading b evicts a (a swap whose cause, memory,
// the timeline shows on hover).
const gpu = fakeSmi();
gpu.card({}, 3072);
const CONFIG = `[server]
api_keys = ["${KEY}"]

[resources]
vram_budget_gb = 20
gpu_probe = "${gpu.smi}"
gpu_probe_interval_ms = 300

[models.a]
cmd = "\${demo} --load-delay-ms 300 --token-ms 5 --tokens 4"
est_vram_gb = 6

[models.b]
cmd = "\${demo} --load-delay-ms 300 --token-ms 5 --tokens 4 --first-token-ms 40"
est_vram_gb = 14
`;

let qm: QmServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${qm.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${KEY}`, ...(init.headers as Record<string, string>) },
  });
const status = async () => (await (await api("/api/status")).json()) as StatusJson;
const history = async () => (await (await api("/api/history?minutes=30")).json()) as HistoryJson;

async function chat(model: string): Promise<void> {
  const res = await api("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content: "hi" }] }),
  });
  expect(res.status).toBe(200);
  await res.text();
}

/** Puts the model's process on the fake card with `mib`, and waits for a reading that shows it. */
async function onCard(models: Record<string, number>): Promise<void> {
  const s = await status();
  const byPid: Record<number, number> = {};
  for (const [id, mib] of Object.entries(models))
    byPid[s.models.find((m) => m.id === id)!.pid!] = mib;
  gpu.card(byPid, 3072);
  const want = Object.keys(models);
  await until(
    history,
    (h) => want.every((id) => (h.memory.at(-1)?.cards[0]?.models[id] ?? 0) > 0),
    5000,
  );
}

const width = (testid: string) =>
  page
    .locator(`svg[data-testid="${testid}"]`)
    .first()
    .evaluate((e) => e.getBoundingClientRect().width);

describe.skipIf(!HAVE_CHROMIUM)("the charts in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    [qm, browser] = await Promise.all([serve(CONFIG), launchChromium()]);
    page = await watchedPage(browser, pageErrors, /status of 401\b/, { width: 1280, height: 900 });
    // a runs and answers, then b evicts it; requests on both.
    await chat("a");
    await chat("a");
    await onCard({ a: 6144 });
    await chat("b");
    await chat("b");
    await chat("b");
    await onCard({ b: 8192 });
    await page.goto(`${qm.url}/ui/`);
    await page.getByLabel("API key").fill(KEY);
    await page.getByRole("button", { name: "Unlock" }).click();
    await page.getByText("live", { exact: true }).waitFor();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await qm?.stop();
  });

  test(
    "Hardware: memory over time, stacked per model, other programs and free, with the ceiling and budget",
    async () => {
      await page.getByRole("tab", { name: "Hardware" }).click();
      const chart = page.locator('svg[data-testid="memory-chart"]');
      await chart.locator("path.area-foreign").waitFor();
      // a, then b, each its own layer; other programs; free; the two lines.
      await until(
        () => chart.locator("path.area").count(),
        (n) => n >= 4,
        10_000,
      );
      expect(await chart.locator("path.line-ceiling").count()).toBe(1);
      expect(await chart.locator("path.line-budget").count()).toBe(1);
      expect(await width("memory-chart")).toBeGreaterThanOrEqual(300);
      const legend = await page
        .locator("figure.chart", { has: chart })
        .locator(".legend")
        .innerText();
      for (const part of ["a", "b", "other programs 3 GB", "free", "ceiling", "budget 20 GB"]) {
        expect(legend).toContain(part);
      }
      expect(await chart.getAttribute("aria-label")).toContain("other programs 3 GB");
    },
    STEP_MS,
  );

  test(
    "Hardware: the residency timeline — a lane per model, loading hatched, resident, requests, the swap's cause",
    async () => {
      const line = page.locator('svg[data-testid="residency-timeline"]');
      await line.locator("rect.bar-resident").first().waitFor();
      expect(await line.locator("text.lane-label").allTextContents()).toEqual(["a", "b"]);
      expect(await line.locator("rect.bar-loading").count()).toBeGreaterThanOrEqual(2);
      expect(await line.locator("rect.bar-resident").count()).toBeGreaterThanOrEqual(2);
      expect(await line.locator("line.tick").count()).toBeGreaterThanOrEqual(5);
      const swaps = await line.locator(".swap title").allTextContents();
      expect(swaps.filter((t) => t.endsWith("loaded b, evicted a (memory)"))).toHaveLength(1);
      // Evaluated in the page (this file has no DOM types).
      expect(
        await page.evaluate(
          `getComputedStyle(document.querySelector('svg[data-testid="residency-timeline"] rect.bar-loading')).fill`,
        ),
      ).toContain("url(");
      expect(await width("residency-timeline")).toBeGreaterThanOrEqual(300);
      await page.screenshot({ path: join(SHOTS, "20-charts-hardware-light.png"), fullPage: true });
    },
    STEP_MS,
  );

  test(
    "Performance: request rate and TTFT per model over the window",
    async () => {
      await page.getByRole("tab", { name: "Performance" }).click();
      for (const id of ["rate-chart", "ttft-chart"]) {
        const svg = page.locator(`svg[data-testid="${id}"]`);
        await svg.locator("circle.series-dot").first().waitFor();
        const d = await svg
          .locator("path.series-line")
          .evaluateAll((ps) => ps.map((p) => p.getAttribute("d") ?? ""));
        expect(d.length).toBe(2);
        expect(d.every((x) => x.startsWith("M"))).toBe(true);
        expect(await width(id)).toBeGreaterThanOrEqual(300);
      }
      const legend = await page
        .locator("figure.chart", { has: page.locator('svg[data-testid="rate-chart"]') })
        .locator(".legend")
        .innerText();
      expect(legend).toContain("a 2 req");
      expect(legend).toContain("b 3 req");
      await page.screenshot({
        path: join(SHOTS, "21-charts-performance-light.png"),
        fullPage: true,
      });
    },
    STEP_MS,
  );

  test(
    "readable in both themes: the chart colours follow the theme",
    async () => {
      // Evaluated in the page (this file has no DOM types).
      const colours = async () =>
        page.evaluate(`(() => {
          const pick = (sel) => {
            const e = document.querySelector(sel);
            return e ? getComputedStyle(e).fill : null;
          };
          return {
            free: pick('svg[data-testid="memory-chart"] path.area-free'),
            axis: pick('svg[data-testid="memory-chart"] .axis text'),
            label: pick('svg[data-testid="residency-timeline"] text.lane-label'),
          };
        })()`);
      await page.getByRole("tab", { name: "Hardware" }).click();
      await page.locator('svg[data-testid="memory-chart"] path.area-free').waitFor();
      const light = await colours();
      expect(light).toEqual({
        free: "rgb(238, 240, 242)",
        axis: "rgb(91, 97, 105)",
        label: "rgb(29, 31, 33)",
      });
      await page.emulateMedia({ colorScheme: "dark" });
      const dark = await colours();
      expect(dark).toEqual({
        free: "rgb(35, 39, 44)",
        axis: "rgb(162, 169, 177)",
        label: "rgb(228, 230, 232)",
      });
      await page.screenshot({ path: join(SHOTS, "22-charts-hardware-dark.png"), fullPage: true });
      await page.getByRole("tab", { name: "Performance" }).click();
      await page.locator('svg[data-testid="ttft-chart"] circle.series-dot').first().waitFor();
      await page.screenshot({
        path: join(SHOTS, "23-charts-performance-dark.png"),
        fullPage: true,
      });
      expect(pageErrors).toEqual([]);
    },
    STEP_MS,
  );
});
