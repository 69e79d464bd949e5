/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core against the
 * compiled `dist/qm` (the bundle as the binary embeds it), with demo models and an API key.
 * One browser and one page for the file; every wait is on a condition, none on a clock.
 * Screenshots go to tests/ui/__shots__/ (git-ignored). Without Chromium the tests skip.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import type { StatusJson } from "../../src/api/status-json.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { serve, until } from "../support/e2e.ts";
import { fakeSmi } from "../support/fake-smi.ts";
import type { QmServer } from "../support/qm-process.ts";
import { chromiumFor, launchChromium, watchedPage } from "./chromium.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

const HAVE_CHROMIUM = chromiumFor("tests/ui/browser.test.ts");

const KEY = "ui-test-key";
const SHOTS = join(import.meta.dir, "__shots__");
const STEP_MS = 20_000;

// `chat` loads in 1.2 s and thinks before it answers in Markdown; `slow` loads in 2.5 s and
// streams for a long time (long enough to be stopped). One group that swaps nothing: both
// may be resident, so one's load does not evict the other.
// A fake nvidia-smi says other programs use 3 GiB of the card: the VRAM bar shows them.
const gpu = fakeSmi();
gpu.card({}, 3072);

const CONFIG = `[server]
api_keys = ["${KEY}"]

[resources]
vram_budget_gb = 20
gpu_probe = "${gpu.smi}"
gpu_probe_interval_ms = 500

[scheduler]
hold_policy = "fixed"

[groups.pair]
members = ["chat", "slow", "tools"]
swap = false

[models.chat]
cmd = "\${demo} --load-delay-ms 1200 --token-ms 15 --tokens 17 --reasoning 6 --markdown --log-requests"
est_vram_gb = 6

[models.tools]
cmd = "\${demo} --token-ms 0 --tokens 3 --tool-calls"

[models.slow]
cmd = "\${demo} --load-delay-ms 2500 --token-ms 20 --tokens 3000 --log-requests"
est_vram_gb = 8.5
concurrency_limit = 1
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
const statusOf = async () => (await (await api("/api/status")).json()) as StatusJson;
const model = (s: StatusJson, id: string) => s.models.find((m) => m.id === id)!;
const shot = (name: string) =>
  page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const row = (id: string) => page.locator(`tr[data-model="${id}"]`);

describe.skipIf(!HAVE_CHROMIUM)("the dashboard in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    [qm, browser] = await Promise.all([serve(CONFIG), launchChromium()]);
    // The answers the tests ask for (the key prompt's 401s, the unknown model's 404) are no error.
    page = await watchedPage(browser, pageErrors, /status of (?:401|404)\b/);
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await qm?.stop();
  });

  test(
    "asks for the key, says when it is wrong, then lists the models",
    async () => {
      await page.goto(`${qm.url}/ui`);
      expect(new URL(page.url()).pathname).toBe("/ui/");
      const field = page.getByLabel("API key");
      await field.waitFor();
      await field.fill("wrong");
      await page.getByRole("button", { name: "Unlock" }).click();
      await page.getByRole("alert").filter({ hasText: "refused that key" }).waitFor();
      await shot("01-key-wrong");
      await field.fill(KEY);
      await page.getByRole("button", { name: "Unlock" }).click();
      await row("chat").waitFor();
      await row("slow").waitFor();
      expect(await row("chat").getAttribute("data-state")).toBe("stopped");
      expect(await page.evaluate(() => sessionStorage.getItem("qm.api-key"))).toBe(KEY);
      await page.getByText("live", { exact: true }).waitFor();
      await shot("02-models");
    },
    STEP_MS,
  );

  test(
    "Load shows the load in progress, then ready, live (no reload)",
    async () => {
      await page.getByRole("button", { name: "Load slow", exact: true }).click();
      await page.locator('tr[data-model="slow"][data-state="starting"]').waitFor();
      await row("slow").locator("progress").waitFor();
      await shot("03-loading");
      await page.locator('tr[data-model="slow"][data-state="ready"]').waitFor();
      // The status read that the state change set off brings the load's duration.
      await row("slow")
        .locator('[data-cell="load"]', { hasText: /^last \d/ })
        .waitFor();
      expect(model(await statusOf(), "slow").state).toBe("ready");
    },
    STEP_MS,
  );

  test(
    "the playground shows the wait, the reasoning apart and the answer as Markdown",
    async () => {
      await page.getByRole("tab", { name: "Playground" }).click();
      await page.locator("#message").waitFor();
      await page.getByLabel("Model").selectOption("chat");
      await page.locator("#message").fill("Hello there");
      await page.getByRole("button", { name: "Send" }).click();
      // `chat` is not loaded: the stream's wait-status comments show while it loads.
      await page.locator("output.wait", { hasText: /loading/ }).waitFor();
      await shot("04-playground-waiting");
      const answer = page.locator(".turn.assistant").last();
      await answer.locator(".markdown h2").waitFor();
      await answer.locator(".meta", { hasText: "finish: stop" }).waitFor();
      expect(await answer.locator(".markdown h2").innerText()).toBe("chat");
      expect(await answer.locator(".markdown li").count()).toBe(2);
      expect(await answer.locator(".markdown pre code").innerText()).toContain("console.log");
      const reasoning = answer.locator("details.reasoning");
      expect(await reasoning.getAttribute("open")).toBeNull();
      await reasoning.locator("summary").click();
      expect(await reasoning.innerText()).toContain("Let me think");
      // Reasoning is not part of the answer.
      expect(await answer.locator(".markdown").innerText()).not.toContain("Let me think");
      expect(await page.locator("output.wait").innerText()).toBe("");
      await shot("05-playground-answer");
    },
    STEP_MS,
  );

  test(
    "Stop aborts the stream mid-way and the model's in-flight count returns to 0",
    async () => {
      await page.getByLabel("Model").selectOption("slow");
      await page.locator("#message").fill("Tell me a long story");
      await page.getByRole("button", { name: "Send" }).click();
      const answer = page.locator(".turn.assistant").last();
      await answer.locator(".markdown p").waitFor();
      await until(statusOf, (s) => model(s, "slow").inflight === 1);
      await page.getByRole("button", { name: "Stop" }).click();
      await answer.locator(".meta", { hasText: "finish: stopped" }).waitFor();
      await until(statusOf, (s) => model(s, "slow").inflight === 0);
      await page.getByRole("button", { name: "Send" }).waitFor();
      await shot("06-playground-stopped");
    },
    STEP_MS,
  );

  test(
    "a request behind another waits, and the Models page shows its place in line",
    async () => {
      // The test's own long stream takes slow's one slot.
      const ahead = new AbortController();
      const first = await api("/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "slow",
          stream: true,
          messages: [{ role: "user", content: "x" }],
        }),
        signal: ahead.signal,
      });
      expect(first.status).toBe(200);
      await until(statusOf, (s) => model(s, "slow").inflight === 1);
      await page.locator("#message").fill("Me next");
      await page.getByRole("button", { name: "Send" }).click();
      // A ready model's queue sends no wait status (that is for loads): the page says what
      // it waits for, and the Models page says where the request stands.
      await page.locator("output.wait", { hasText: "waiting for slow…" }).waitFor();
      await shot("07-playground-queued");
      await page.getByRole("tab", { name: "Models" }).click();
      await row("slow").locator('[data-cell="queued"]', { hasText: "1 (#1)" }).waitFor();
      // The one ahead leaves: the playground's turn comes, and Stop ends it.
      ahead.abort();
      await first.body?.cancel().catch(() => {});
      await page.getByRole("tab", { name: "Playground" }).click();
      const answer = page.locator(".turn.assistant").last();
      await answer.locator(".markdown p").waitFor();
      await page.getByRole("button", { name: "Stop" }).click();
      await answer.locator(".meta", { hasText: "finish: stopped" }).waitFor();
      await until(
        statusOf,
        (s) => model(s, "slow").inflight === 0 && model(s, "slow").queued === 0,
      );
    },
    STEP_MS,
  );

  test(
    "the activity page lists the requests with their figures",
    async () => {
      await page.getByRole("tab", { name: "Activity" }).click();
      const rows = page.locator("table.activity tbody tr");
      await rows.filter({ hasText: "slow" }).filter({ hasText: "openai" }).first().waitFor();
      const chat = rows.filter({ hasText: "chat" }).filter({ hasText: "openai" }).first();
      const cells = await chat.locator("td").allInnerTexts();
      // Time, model, API, status, wait, TTFT, duration, in, out, tok/s, finish, swap.
      expect(cells.slice(1, 4)).toEqual(["chat", "openai", "200"]);
      expect(cells[4]).toMatch(/\d/); // waited for its load
      expect(cells[5]).toMatch(/\d/); // TTFT
      expect(cells[8]).toBe("23"); // 17 answer + 6 reasoning tokens
      expect(cells[10]).toBe("stop");
      expect(cells[11]).toBe("yes");
      await shot("08-activity");
      await page.getByRole("tab", { name: "Performance" }).click();
      await page.locator("tbody th", { hasText: "chat" }).waitFor();
      await shot("09-performance");
    },
    STEP_MS,
  );

  test(
    "the logs page follows a model's output live",
    async () => {
      await page.goto(`${qm.url}/ui/#/logs/chat`);
      const logs = page.locator("pre.logs");
      await logs.filter({ hasText: "POST /v1/chat/completions" }).waitFor();
      const before = ((await logs.innerText()).match(/POST \/v1\/chat/g) ?? []).length;
      const res = await api("/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }),
      });
      expect(res.status).toBe(200);
      // One more request line than before, with no reload (the page has no DOM types here).
      const more = new RegExp(`(?:POST /v1/chat/completions[^]*){${before + 1}}`);
      await logs.filter({ hasText: more }).waitFor();
      await shot("10-logs");
    },
    STEP_MS,
  );

  test(
    "unloading a leased model asks first, then forces it",
    async () => {
      const lease = await api("/api/models/slow/lease", { method: "POST" });
      expect(lease.status).toBe(200);
      await page.getByRole("tab", { name: "Models" }).click();
      await until(statusOf, (s) => model(s, "slow").leases === 1);
      await row("slow").locator("td", { hasText: /^1$/ }).first().waitFor();
      const asked = page.waitForEvent("dialog").then(async (d) => {
        const text = d.message();
        await d.accept();
        return text;
      });
      await page.getByRole("button", { name: "Unload slow", exact: true }).click();
      expect(await asked).toContain("slow holds 1 lease");
      await page.locator('tr[data-model="slow"][data-state="stopped"]').waitFor();
      expect(model(await statusOf(), "slow").leases).toBe(0);
      // qm trusts a reading that lists its own processes: the card now shows chat's.
      const chatPid = model(await statusOf(), "chat").pid!;
      gpu.card({ [chatPid]: 6144 }, 3072);
      await until(statusOf, (s) => s.resources.gpu !== null, 5000);
      await page.getByRole("tab", { name: "Hardware" }).click();
      await page.getByRole("heading", { name: "VRAM" }).waitFor();
      // The picture: chat's estimate loaded, other programs' 3 GB, the budget and the ceiling.
      const legend = page.locator(".vram .legend");
      await legend.filter({ hasText: "other programs 3 GB" }).waitFor();
      expect(await legend.innerText()).toContain("qm's models 6 GB");
      expect(await legend.innerText()).toContain("budget 20 GB");
      await page.getByRole("rowheader", { name: "other programs", exact: true }).waitFor();
      await shot("11-hardware");
      await shot("11-hardware");
      expect(pageErrors).toEqual([]);
    },
    STEP_MS,
  );

  test(
    "a second load shows its progress against the last one's time",
    async () => {
      await page.getByRole("tab", { name: "Models" }).click();
      await page.getByRole("button", { name: "Load slow", exact: true }).click();
      // It ticks in the page between status reads: past 0%, below 100%.
      await row("slow")
        .locator('[data-cell="load"]', { hasText: /^[1-9]\d?%$/ })
        .waitFor();
      await shot("12-second-load");
      await page.locator('tr[data-model="slow"][data-state="ready"]').waitFor();
    },
    STEP_MS,
  );

  test(
    "a hold after a tool call counts down live, then says how it ended; the tabs answer the arrow keys",
    async () => {
      // A request that offers tools and gets a tool call back earns its model a hold.
      const askTools = async (holdMs: number) => {
        const res = await api("/v1/chat/completions", {
          method: "POST",
          headers: { "content-type": "application/json", "x-qm-hold-ms": String(holdMs) },
          body: JSON.stringify({
            model: "tools",
            messages: [{ role: "user", content: "weather?" }],
            tools: [{ type: "function", function: { name: "get_weather", parameters: {} } }],
          }),
        });
        return ((await res.json()) as { choices: { finish_reason: string }[] }).choices[0]!
          .finish_reason;
      };
      expect(await askTools(60_000)).toBe("tool_calls");
      const hold = row("tools").locator('[data-cell="hold"]');
      await hold.filter({ hasText: /^[1-5]?\ds$|^1m 00s$/ }).waitFor();
      const first = await hold.innerText();
      // Ticking in the page, from the status' hold end: the next second shows less.
      await hold.filter({ hasText: new RegExp(`^(?!${first}$)`) }).waitFor();
      await shot("13-hold");
      // A 1 ms hold in its place runs out at once: the row says how its last hold ended.
      expect(await askTools(1)).toBe("tool_calls");
      await row("tools")
        .locator('[data-cell="hold-why"]', { hasText: /^expired: gap spent, \d+s ago$/ })
        .waitFor();
      expect(await hold.innerText()).toStartWith("–");
      const tab = page.getByRole("tab", { name: "Models" });
      await tab.focus();
      await page.keyboard.press("ArrowRight");
      await page.getByRole("tab", { name: "Activity", selected: true }).waitFor();
      expect(await page.evaluate("document.activeElement.id")).toBe("tab-activity");
      await page.keyboard.press("ArrowLeft");
      await page.getByRole("tab", { name: "Models", selected: true }).waitFor();
    },
    STEP_MS,
  );

  test(
    "the playground shows an API error from its envelope; Clear empties the conversation; options apply",
    async () => {
      await page.goto(`${qm.url}/ui/#/playground/no-such-model`);
      await page.locator("#message").fill("anyone?");
      await page.getByRole("button", { name: "Send" }).click();
      const alert = page.locator(".turn.assistant [role=alert]");
      await alert.waitFor();
      expect(await alert.innerText()).toStartWith('model "no-such-model" not found');
      await page.getByRole("button", { name: "Clear conversation" }).click();
      await page.getByText("Send a message to start.").waitFor();
      expect(await page.locator(".turn").count()).toBe(0);
      // Options go into the request: max tokens cuts the answer (finish "length").
      await page.getByLabel("Model").selectOption("chat");
      await page.locator("summary", { hasText: "Options" }).click();
      await page.getByLabel("System prompt").fill("Be brief.");
      await page.getByLabel("Max tokens").fill("5");
      await page.locator("#message").fill("Short, please");
      await page.getByRole("button", { name: "Send" }).click();
      await page.locator(".turn.assistant .meta", { hasText: "finish: length" }).waitFor();
      await page.getByRole("tab", { name: "Models" }).click();
    },
    STEP_MS,
  );

  test(
    "dark and narrow",
    async () => {
      await page.emulateMedia({ colorScheme: "dark" });
      await page.setViewportSize({ width: 420, height: 800 });
      await row("slow").waitFor();
      await shot("14-dark-narrow");
      await page.getByRole("tab", { name: "Playground" }).click();
      await shot("15-dark-playground");
      const bg = await page.evaluate("getComputedStyle(document.body).backgroundColor");
      expect(bg).toBe("rgb(21, 23, 26)");
      expect(pageErrors).toEqual([]);
    },
    STEP_MS,
  );
});
