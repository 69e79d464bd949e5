/**
 * `/ui/`: the embedded dashboard's files, open without the key (they hold no data), with
 * caching, compression and a CSP; everything else stays behind the key and the Origin check.
 */
import { describe, expect, test } from "bun:test";
import { gunzipSync } from "node:zlib";
import { UI_CSP, uiSizes } from "../../src/ui/routes.ts";
import { fakeGateway } from "../support/fake-gateway.ts";
import { appOf, bodyOf, call } from "../support/in-process.ts";

const TOML = `[server]\napi_keys = ["secret"]\n\n[models.m]\ncmd = "run m"\nproxy = "http://127.0.0.1:9"\n`;
const app = appOf(fakeGateway(TOML));
const get = (path: string, headers: Record<string, string> = {}) =>
  call(app, "GET", path, null, headers);

describe("/ui/", () => {
  test("/ui redirects to /ui/", async () => {
    const res = await get("/ui");
    expect(res.status).toBe(308);
    expect(res.headers.get("location")).toBe("/ui/");
  });

  test("the shell is served without a key, links its files and has no inline script", async () => {
    const res = await get("/ui/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toBe(UI_CSP);
    expect(UI_CSP).toContain("default-src 'self'");
    expect(UI_CSP).toContain("script-src 'self'");
    expect(UI_CSP).not.toContain("unsafe");
    const html = await res.text();
    expect(html).toContain('<script type="module" src="./app.js"></script>');
    expect(html).toContain('<link rel="stylesheet" href="./app.css">');
    // Every <script> has a src: the CSP would block an inline one anyway.
    expect([...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>/g)]).toEqual([]);
    // Nothing from elsewhere: the page works offline.
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
  });

  test("the script and styles are the built app, with a strong ETag and no-cache", async () => {
    const js = await get("/ui/app.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(js.headers.get("cache-control")).toBe("no-cache");
    expect(js.headers.get("x-content-type-options")).toBe("nosniff");
    const etag = js.headers.get("etag");
    expect(etag).toMatch(/^"[0-9a-z]+"$/);
    const text = await js.text();
    // The bundle is minified, holds the app (its key prompt's wording) and no external import.
    expect(text).toContain("qm.api-key");
    expect(text).not.toMatch(/\bimport\s*[^(]*from\s*["']/);
    expect(text.length).toBeGreaterThan(10_000);
    const css = await get("/ui/app.css");
    expect(css.status).toBe(200);
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(await css.text()).toContain("prefers-color-scheme: dark");
    expect(css.headers.get("etag")).not.toBe(etag);
  });

  test("a matching If-None-Match is a 304 without a body (a list, weak tags, *)", async () => {
    const etag = (await get("/ui/app.js")).headers.get("etag")!;
    const res = await get("/ui/app.js", { "if-none-match": etag });
    expect(res.status).toBe(304);
    expect(res.headers.get("etag")).toBe(etag);
    expect(await res.text()).toBe("");
    expect((await get("/ui/app.js", { "if-none-match": '"other"' })).status).toBe(200);
    expect((await get("/ui/app.js", { "if-none-match": `"other", W/${etag}` })).status).toBe(304);
    expect((await get("/ui/app.js", { "if-none-match": "*" })).status).toBe(304);
  });

  test("the gzipped bytes have their own ETag: one representation's tag never validates the other", async () => {
    const plain = (await get("/ui/app.js")).headers.get("etag")!;
    const packed = await get("/ui/app.js", { "accept-encoding": "gzip" });
    const gzTag = packed.headers.get("etag")!;
    expect(gzTag).not.toBe(plain);
    const again = await get("/ui/app.js", { "accept-encoding": "gzip", "if-none-match": gzTag });
    expect(again.status).toBe(304);
    const other = await get("/ui/app.js", { "accept-encoding": "gzip", "if-none-match": plain });
    expect(other.status).toBe(200);
    expect(other.headers.get("content-encoding")).toBe("gzip");
  });

  test("gzip when the browser takes it, the same bytes once unpacked", async () => {
    const plain = new Uint8Array(await (await get("/ui/app.js")).arrayBuffer());
    const res = await get("/ui/app.js", { "accept-encoding": "gzip, deflate, br" });
    expect(res.headers.get("content-encoding")).toBe("gzip");
    expect(res.headers.get("vary")).toBe("Accept-Encoding");
    const packed = new Uint8Array(await res.arrayBuffer());
    expect(packed.length).toBeLessThan(plain.length / 2);
    expect(new Uint8Array(gunzipSync(packed))).toEqual(plain);
  });

  test("HEAD answers the headers only", async () => {
    const res = await call(app, "HEAD", "/ui/app.css");
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
  });

  test("any other /ui/ path needs the key like every path, then is a 404 in the OpenAI envelope", async () => {
    expect((await get("/ui/x")).status).toBe(401);
    const res = await get("/ui/x", { authorization: "Bearer secret" });
    expect(res.status).toBe(404);
    expect((await bodyOf(res)).error.code).toBe("not_found");
    expect((await get("/ui/app.js/", { authorization: "Bearer secret" })).status).toBe(404);
    expect((await get("/ui//app.js", { authorization: "Bearer secret" })).status).toBe(404);
    // Other methods are no route either (and, not being open paths, need the key first).
    expect((await call(app, "POST", "/ui/app.js", "x")).status).toBe(401);
    const post = await call(app, "POST", "/ui/", "x", { authorization: "Bearer secret" });
    expect(post.status).toBe(404);
    expect((await bodyOf(post)).error.message).toBe("no route for POST /ui/");
  });

  test("the data stays behind the key; the page's own fetches pass the Origin check", async () => {
    expect((await get("/api/status")).status).toBe(401);
    const wrong = await get("/api/status", { authorization: "Bearer nope" });
    expect(wrong.status).toBe(401);
    expect((await bodyOf(wrong)).error.message).toBe("invalid API key");
    // What Chromium sends for a same-origin fetch from the page.
    const page = {
      authorization: "Bearer secret",
      host: "localhost",
      origin: "http://localhost",
      "sec-fetch-site": "same-origin",
    };
    expect((await get("/api/status", page)).status).toBe(200);
    expect((await get("/api/status", { ...page, origin: "http://evil.example" })).status).toBe(403);
    // A page elsewhere cannot even load the script as a no-cors resource... it may (it is
    // public), but it can read no data with it: the Origin check still refuses its calls.
    const cross = await get("/api/status", {
      authorization: "Bearer secret",
      "sec-fetch-site": "cross-site",
    });
    expect(cross.status).toBe(403);
  });

  test("the app stays small: under 200 KB, 80 KB gzipped (src/ui/design.md has the figures)", () => {
    const sizes = uiSizes();
    expect(sizes["/ui/app.js"]!.bytes).toBeLessThan(200_000);
    expect(sizes["/ui/app.js"]!.gzip).toBeLessThan(80_000);
    expect(sizes["/ui/app.css"]!.gzip).toBeLessThan(8_000);
  });
});
