/**
 * The Usage page in Chromium against the compiled `dist/qm` with named keys: an admin sees
 * every key's usage and who waits for what; a key that is no admin sees its own. Every wait is
 * on a condition. Without Chromium the tests skip.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { serve, until } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

const CHROMIUM = process.env.QM_CHROMIUM ?? "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const STEP_MS = 30_000;

// `slow` loads for 3 s: a request for it waits long enough to be seen waiting.
const CONFIG = `[server]
api_keys = ["sk-root"]

[keys.alice]
key = "sk-alice"
models = ["chat"]

[keys.ci]
key = "sk-ci"
models = ["slow"]
priority = "batch"

[groups.all]
members = ["chat", "slow"]
swap = false

[models.chat]
cmd = "\${demo} --token-ms 0 --tokens 5"

[models.slow]
cmd = "\${demo} --load-delay-ms 3000 --token-ms 0 --tokens 5"
`;

let qm: QmServer;
let browser: Browser;
const errors: string[] = [];

const ask = (key: string, model: string) =>
  fetch(`${qm.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });

async function unlock(key: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(15_000);
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 401\b/.test(m.text())) errors.push(m.text());
  });
  await page.goto(`${qm.url}/ui/`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Unlock" }).click();
  await page.getByRole("tab", { name: "Usage" }).click();
  return page;
}

describe.skipIf(!HAVE_CHROMIUM)("the Usage page in Chromium", () => {
  beforeAll(async () => {
    [qm, browser] = await Promise.all([
      serve(CONFIG),
      chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] }),
    ]);
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await qm?.stop();
  });

  test(
    "an admin sees who waits for what, then every key's requests, tokens and wait",
    async () => {
      for (let i = 0; i < 2; i++) expect((await ask("sk-alice", "chat")).status).toBe(200);
      const admin = await unlock("sk-root");
      // ci's request waits while slow loads: the page names it.
      const waiting = ask("sk-ci", "slow");
      const row = admin.locator('tr[data-waiting="ci"]');
      await row.waitFor();
      expect(await row.innerText()).toContain("slow");
      expect((await waiting).status).toBe(200);
      await row.waitFor({ state: "detached" });
      // The usage is read when the page opens: open it again.
      await admin.getByRole("tab", { name: "Models" }).click();
      await admin.getByRole("tab", { name: "Usage" }).click();
      const alice = admin.locator('tr[data-key="alice"]');
      const ci = admin.locator('tr[data-key="ci"]');
      await alice.waitFor();
      await ci.waitFor();
      const cells = async (r: typeof alice) =>
        (await r.locator("td").allInnerTexts()).map((t) => t.trim());
      // Requests, tokens in, tokens out, mean wait, swaps, models.
      const a = await cells(alice);
      expect(a[0]).toBe("2");
      expect(a[5]).toBe("chat");
      const c = await cells(ci);
      expect(c[0]).toBe("1");
      expect(c[3]).toMatch(/^\d(\.\d)? s$/); // it waited for the 3 s load
      expect(c[4]).toBe("1");
      await admin.close();
    },
    STEP_MS,
  );

  test(
    "a key that is no admin sees its own usage only",
    async () => {
      const page = await unlock("sk-alice");
      await page.locator('tr[data-key="alice"]').waitFor();
      expect(await page.locator('tr[data-key="ci"]').count()).toBe(0);
      expect(await page.locator("section[aria-label=Usage]").innerText()).not.toContain("slow");
      // The Models page lists its model only.
      await page.getByRole("tab", { name: "Models" }).click();
      await page.locator('tr[data-model="chat"]').waitFor();
      expect(await page.locator('tr[data-model="slow"]').count()).toBe(0);
      await until(
        async () => page.locator("tr[data-model]").count(),
        (n) => n === 1,
      );
      await page.close();
      expect(errors).toEqual([]);
    },
    STEP_MS,
  );
});
