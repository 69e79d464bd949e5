/**
 * Chromium for the dashboard's browser tests: Debian's, driven by playwright-core (QM_CHROMIUM
 * names another). Without it those tests skip, saying so once per file.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";

export const CHROMIUM = process.env.QM_CHROMIUM ?? "/usr/bin/chromium";
export const HAVE_CHROMIUM = existsSync(CHROMIUM);

/** Warns that `file`'s tests skip when there is no Chromium; true when there is one. */
export function chromiumFor(file: string): boolean {
  if (!HAVE_CHROMIUM)
    console.warn(`${file}: skipped, no Chromium at ${CHROMIUM} (set QM_CHROMIUM)`);
  return HAVE_CHROMIUM;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}

/**
 * A page of `width`×`height` whose script errors and console errors (a CSP violation, a failed
 * script) are pushed onto `errors`; console errors matching `expected` (answers a test asks for,
 * such as the key prompt's 401) are not.
 */
export async function watchedPage(
  browser: Browser,
  errors: string[],
  expected: RegExp,
  viewport = { width: 1280, height: 800 },
): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.setDefaultTimeout(10_000);
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !expected.test(m.text())) errors.push(`console: ${m.text()}`);
  });
  return page;
}
