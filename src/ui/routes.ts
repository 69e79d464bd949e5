/**
 * `/ui/`: the dashboard and playground. Three static files, built into the binary (bundle.ts),
 * each served with a strong ETag (a revalidation costs a 304), gzip when the browser takes it,
 * and a Content-Security-Policy that allows only qm's own script, styles and API: model text
 * the page shows can never run as code. Everything the page knows it fetches, with the key.
 */
import { Elysia, NotFoundError } from "elysia";
import { appScript, appStyles } from "./bundle.ts" with { type: "macro" };
import { shellHtml } from "./shell.ts";

/** Same-origin only; no inline script or style, no frames, no plug-ins (CSP Level 3). */
export const UI_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

interface Asset {
  type: string;
  body: Uint8Array;
  gzip: Uint8Array;
  etag: string;
}

function asset(type: string, text: string): Asset {
  const body = new TextEncoder().encode(text);
  return {
    type,
    body,
    gzip: Bun.gzipSync(body, { level: 9 }),
    etag: `"${Bun.hash(body).toString(36)}"`,
  };
}

/** The assets, made once per process on first use (the gzip costs a few ms). */
let assets: Record<string, Asset> | null = null;
function assetsOnce(): Record<string, Asset> {
  assets ??= {
    "/ui/": asset("text/html; charset=utf-8", shellHtml()),
    "/ui/app.js": asset("text/javascript; charset=utf-8", appScript()),
    "/ui/app.css": asset("text/css; charset=utf-8", appStyles()),
  };
  return assets;
}

/** The sizes of the embedded files, plain and gzipped (bytes). */
export function uiSizes(): Record<string, { bytes: number; gzip: number }> {
  return Object.fromEntries(
    Object.entries(assetsOnce()).map(([path, a]) => [
      path,
      { bytes: a.body.length, gzip: a.gzip.length },
    ]),
  );
}

function serve(path: string, request: Request): Response {
  const a = assetsOnce()[path]!;
  const gzip = /\bgzip\b/.test(request.headers.get("accept-encoding") ?? "");
  // The gzipped bytes are another representation, so they carry their own ETag (RFC 9110
  // §8.8.3); Vary says the choice depends on Accept-Encoding.
  const etag = gzip ? `${a.etag.slice(0, -1)}-gz"` : a.etag;
  const headers = new Headers({
    "content-type": a.type,
    // Revalidate every time: the names carry no version, and a 304 is cheap.
    "cache-control": "no-cache",
    etag,
    vary: "Accept-Encoding",
    "content-security-policy": UI_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  });
  if (matches(request.headers.get("if-none-match"), etag)) {
    return new Response(null, { status: 304, headers });
  }
  if (gzip) headers.set("content-encoding", "gzip");
  return new Response(gzip ? a.gzip : a.body, { headers });
}

/**
 * If-None-Match: `*` or a list of entity tags, compared weakly (RFC 9110 §13.1.2: a `W/`
 * prefix does not matter).
 */
function matches(header: string | null, etag: string): boolean {
  if (header === null) return false;
  return header
    .split(",")
    .map((t) => t.trim().replace(/^W\//, ""))
    .some((t) => t === "*" || t === etag);
}

export function uiRoutes() {
  // Elysia routes `/ui/` to `/ui` and `/ui/app.js/` to `/ui/app.js` (it ignores one trailing
  // slash, whatever `strictPath` a plug-in sets), so each handler checks the path it got.
  const exact = (request: Request, path: string) => {
    if (pathOf(request) !== path) throw new NotFoundError();
    return serve(path, request);
  };
  return new Elysia()
    .get("/ui", ({ request }) =>
      pathOf(request) === "/ui/"
        ? serve("/ui/", request)
        : new Response(null, { status: 308, headers: { location: "/ui/" } }),
    )
    .get("/ui/app.js", ({ request }) => exact(request, "/ui/app.js"))
    .get("/ui/app.css", ({ request }) => exact(request, "/ui/app.css"));
}

function pathOf(request: Request): string {
  const url = request.url;
  const from = url.indexOf("/", url.indexOf("//") + 2);
  const end = url.slice(from).search(/[?#]/);
  return end < 0 ? url.slice(from) : url.slice(from, from + end);
}
