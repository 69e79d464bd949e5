/**
 * Security suite. With `api_keys = ["k"]`: every route, without a key, through request-target
 * tricks (fragments, dot segments, escapes, absolute-form, case, `//`) and odd Host headers;
 * any probe that gets at something other than the open paths (`/health`, `/ready`, the
 * dashboard's static files) is a bypass. Without keys: DNS
 * rebinding (a foreign Host on a loopback listener) and cross-site requests (a foreign Origin,
 * `text/plain` so no preflight) must be refused (403), and no CORS header may let a foreign
 * page read an answer.
 */
import { INFERENCE_ROUTES } from "../../src/api/openai/routes.ts";
import { type RawResponse, rawRequest } from "../../tests/support/raw-http.ts";
import { log } from "../bench/util.ts";
import { configToml, demoCmd, load, type Qm } from "./qm.ts";
import { anthropicEnvelope, openaiEnvelope } from "./verdict.ts";

const OK = "s-ok";
const LEASED = "s-lease";
export const KEY = "k";

export function securityConfig(stateDir: string, withKeys: boolean): string {
  const body = `[groups.sec]
members = ${JSON.stringify([OK, LEASED])}
swap = false
exclusive = false

[models.${OK}]
cmd = ${JSON.stringify(demoCmd(OK, "--tokens 4 --token-ms 0"))}

[models.${LEASED}]
cmd = ${JSON.stringify(demoCmd(LEASED, "--tokens 4 --token-ms 0"))}
`;
  return configToml({ stateDir, server: withKeys ? `api_keys = ["${KEY}"]` : "", body });
}

const chat = JSON.stringify({
  model: OK,
  max_tokens: 4,
  messages: [{ role: "user", content: "hi" }],
});
const LEASE_ID = "{lease}";

/** Every route qm serves, with the method it answers (`{lease}` is a live lease id). */
export const ROUTES: [string, string, string?][] = [
  ["GET", "/health"],
  ["GET", "/ready"],
  ["GET", "/ui/"],
  ["GET", "/ui/app.js"],
  ["GET", "/api/status"],
  ["GET", "/api/requests"],
  ["GET", "/api/requests/1"],
  ["GET", "/api/events"],
  ["GET", "/running"],
  ["GET", "/v1/models"],
  ["GET", "/models"],
  ["GET", `/api/models/${OK}/logs`],
  ["POST", `/api/models/${OK}/load`],
  ["POST", `/api/models/${OK}/unload`],
  ["POST", "/api/models/unload"],
  ["POST", "/api/config/reload"],
  ["POST", `/api/models/${LEASED}/lease`, '{"ttl_s":2}'],
  ["POST", `/api/models/${LEASED}/lease/${LEASE_ID}`, '{"ttl_s":2}'],
  ["DELETE", `/api/models/${LEASED}/lease/${LEASE_ID}`],
  ...[
    ...INFERENCE_ROUTES.map(([path]) => path),
    "/v1/messages",
    "/v1/messages/count_tokens",
    "/v1/responses",
  ].map((p): [string, string, string] => ["POST", p, chat]),
  ["GET", `/upstream/${OK}/health`],
  ["POST", `/upstream/${OK}/v1/chat/completions`, chat],
  ["GET", `/upstream/${OK}/v1/models`],
];

/** Request-target tricks on a path P; each should reach P only with a valid key. */
const TRICKS: [string, (p: string) => string][] = [
  ["plain", (p) => p],
  ["health#P", (p) => `/health#${p}`],
  ["health?P", (p) => `/health?${p}`],
  ["health/#P", (p) => `/health/#${p}`],
  ["health/..P", (p) => `/health/..${p}`],
  ["health/%2e%2eP", (p) => `/health/%2e%2e${p}`],
  ["health;P", (p) => `/health;${p}`],
  ["P#/health", (p) => `${p}#/health`],
  ["P?/health", (p) => `${p}?/health`],
  ["//P", (p) => `/${p}`],
  ["/.P", (p) => `/.${p}`],
  ["P/", (p) => `${p}/`],
  ["upper", (p) => p.toUpperCase()],
  ["%2F", (p) => p.replace(/\/(?=[^/]*$)/, "%2F")],
  ["escaped", (p) => p.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`)],
  ["absolute", (p) => `http://x${p}`],
  ["absolute-health#P", (p) => `http://x/health#${p}`],
  ["ready#P", (p) => `/ready#${p}`],
  ["ready/..P", (p) => `/ready/..${p}`],
  ["ui/..P", (p) => `/ui/..${p}`],
  ["ui/%2e%2eP", (p) => `/ui/%2e%2e${p}`],
  ["ui/app.js?P", (p) => `/ui/app.js?${p}`],
  ["ui/app.js#P", (p) => `/ui/app.js#${p}`],
];

/** The paths open without a key: their own answers are no bypass. */
const OPEN_PATHS = new Set(["/health", "/ready", "/ui/", "/ui/app.js"]);

const HOSTS = (port: number): (string | null)[] => [
  `127.0.0.1:${port}`,
  "x",
  "qm",
  "",
  "localhost",
  null,
];

function request(
  method: string,
  target: string,
  host: string | null,
  headers: string[],
  body = "",
) {
  const lines = [`${method} ${target} HTTP/1.1`];
  if (host !== null) lines.push(`Host: ${host}`.trimEnd());
  lines.push("Connection: close", ...headers);
  if (body || method === "POST")
    lines.push("Content-Type: application/json", `Content-Length: ${body.length}`);
  return `${lines.join("\r\n")}\r\n\r\n${body}`;
}

function jsonData(text: string): boolean {
  try {
    const v = JSON.parse(text);
    return typeof v === "object" && v !== null && !openaiEnvelope(text) && !anthropicEnvelope(text);
  } catch {
    return false;
  }
}

const HEALTH = /^\{"status":"(ok|shutting down)"\}$/;
const READY = /^\{"ready":(true|false)(,"reason":"[^"]*")?\}$/;
/** The dashboard's static files: the page, its script and style (no data in them). */
const STATIC = /^(text\/html|text\/css|text\/javascript|application\/javascript)\b/;

/**
 * Got at something: a 2xx other than /health's own answer, a response a model produced
 * (`x-qm-model`), or data (JSON that is not an error) under any status but the refusals.
 */
function gotThrough(r: RawResponse): boolean {
  if (r.noResponse) return false;
  if (r.headers.has("x-qm-model")) return true;
  if (r.status >= 200 && r.status < 300) {
    const body = r.body.trim();
    return (
      !HEALTH.test(body) && !READY.test(body) && !STATIC.test(r.headers.get("content-type") ?? "")
    );
  }
  if ([400, 401, 403, 404, 405, 413, 414, 431].includes(r.status)) return false;
  return jsonData(r.body);
}

export interface SecurityResult {
  routes: number;
  probes: number;
  bypassed: number;
}

/** Probes and bypasses, grouped by trick (its first word: `health#P`, `rebinding`, …). */
class Book {
  probes = 0;
  bypassed = 0;
  readonly tricks = new Map<string, { n: number; routes: Set<string>; example: string }>();
  readonly routes = new Set<string>();
  note(route: string, what: string, bad: boolean, r: RawResponse) {
    this.probes++;
    this.routes.add(route);
    if (!bad) return;
    this.bypassed++;
    const key = what.split(" ")[0] as string;
    const body = JSON.stringify(r.body.slice(0, 90));
    const t = this.tricks.get(key) ?? {
      n: 0,
      routes: new Set(),
      example: `${what} → ${r.status} ${body}`,
    };
    this.tricks.set(key, t);
    t.n++;
    t.routes.add(route);
  }
}

/** Runs `jobs` with `n` at a time. */
async function pool(jobs: (() => Promise<void>)[], n: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) await (jobs[next++] as () => Promise<void>)();
  };
  await Promise.all(Array.from({ length: n }, worker));
}

async function newLease(qm: Qm, key?: string): Promise<string> {
  const res = await fetch(`${qm.url}/api/models/${LEASED}/lease`, {
    method: "POST",
    headers: key ? { authorization: `Bearer ${key}` } : {},
    body: '{"ttl_s":2}',
    signal: AbortSignal.timeout(5000),
  }).catch(() => null);
  return res?.ok ? ((await res.json()) as { lease: string }).lease : "none";
}

/** Without a key, on the keyed qm: every route × trick × Host, and wrong keys. */
export async function authProbes(qm: Qm, book: Book): Promise<void> {
  log(`security: routes probed: ${ROUTES.map(([m, p]) => `${m} ${p}`).join(", ")}`);
  await load(qm, OK, KEY);
  await load(qm, LEASED, KEY);
  const sanity = await rawRequest(
    qm.port,
    request("GET", "/api/status", `127.0.0.1:${qm.port}`, [`Authorization: Bearer ${KEY}`]),
    { timeoutMs: 5000 },
  );
  if (sanity.status !== 200)
    throw new Error(`security: GET /api/status with the key answered ${sanity.status}`);
  const jobs: (() => Promise<void>)[] = [];
  for (const [method, path, body] of ROUTES) {
    const route = `${method} ${path}`;
    const probe =
      (target: string, host: string | null, headers: string[], what: string) => async () => {
        const t = target.includes(LEASE_ID)
          ? target.replace(LEASE_ID, await newLease(qm, KEY))
          : target;
        const r = await rawRequest(qm.port, request(method, t, host, headers, body), {
          timeoutMs: 5000,
        });
        book.note(
          route,
          `${what} ${method} ${t} Host:${host ?? "(none)"}`,
          !OPEN_PATHS.has(path) && gotThrough(r),
          r,
        );
      };
    for (const [name, trick] of TRICKS) {
      for (const host of HOSTS(qm.port)) jobs.push(probe(trick(path), host, [], name));
    }
    for (const auth of [
      "Authorization: Bearer wrong",
      "x-api-key: wrong",
      "Authorization: Bearer",
      "Authorization: Basic k",
    ]) {
      jobs.push(probe(path, `127.0.0.1:${qm.port}`, [auth], `key(${auth})`));
    }
  }
  await pool(jobs, 6);
}

/** ACAO that lets a page on `origin` read the answer. */
const readable = (r: RawResponse, origin: string) => {
  const acao = r.headers.get("access-control-allow-origin");
  return acao === "*" || acao === origin;
};

/** On the keyless qm: foreign Host (rebinding) and foreign Origin (CSRF, CORS). */
export async function browserProbes(qm: Qm, book: Book): Promise<void> {
  await load(qm, OK);
  await load(qm, LEASED);
  const own = await rawRequest(qm.port, request("GET", "/api/status", `127.0.0.1:${qm.port}`, []), {
    timeoutMs: 5000,
  });
  if (own.status !== 200)
    throw new Error(`security: keyless GET /api/status answered ${own.status}`);
  const evil = "http://evil.example";
  const jobs: (() => Promise<void>)[] = [];
  for (const [method, path, body] of ROUTES) {
    if (path === "/health") continue;
    const route = `${method} ${path}`;
    const send = async (m: string, target: string, host: string, headers: string[], b = body) => {
      const t = target.includes(LEASE_ID) ? target.replace(LEASE_ID, await newLease(qm)) : target;
      let text = request(m, t, host, headers, b);
      // A simple request: text/plain needs no preflight, so a browser sends it as it is.
      if (headers.some((h) => h.startsWith("Origin:"))) {
        text = text.replace("Content-Type: application/json", "Content-Type: text/plain");
      }
      return rawRequest(qm.port, text, { timeoutMs: 5000 });
    };
    const local = `127.0.0.1:${qm.port}`;
    for (const host of ["evil.example", `evil.example:${qm.port}`]) {
      jobs.push(async () => {
        const r = await send(method, path, host, []);
        book.note(route, `rebinding Host:${host}`, gotThrough(r), r);
      });
    }
    // Absolute-form as a proxy would relay a rebound page's request. (With a loopback Host
    // header instead, Bun hands qm that Host and not the target's authority; only a client
    // that is not a browser can send it, and the same client is admitted with origin-form and
    // the loopback Host anyway, so it is no rebinding.)
    jobs.push(async () => {
      const r = await send(method, `http://evil.example${path}`, "evil.example", []);
      book.note(route, "rebinding absolute-form http://evil.example", gotThrough(r), r);
    });
    for (const origin of [evil, "null"]) {
      jobs.push(async () => {
        const r = await send(method, path, local, [`Origin: ${origin}`]);
        // A cross-site GET is harmless unless CORS lets the page read it; anything else must
        // not run at all.
        const bad = method === "GET" ? readable(r, origin) : gotThrough(r) || readable(r, origin);
        book.note(route, `cross-site Origin:${origin}`, bad, r);
      });
    }
    jobs.push(async () => {
      const pre = [
        `Origin: ${evil}`,
        `Access-Control-Request-Method: ${method}`,
        "Access-Control-Request-Headers: content-type, authorization",
      ];
      const r = await send("OPTIONS", path, local, pre, "");
      book.note(route, "preflight OPTIONS", r.status < 300 && readable(r, evil), r);
    });
  }
  await pool(jobs, 6);
}

export function newBook(): Book {
  return new Book();
}

export function reportBook(book: Book): SecurityResult {
  log(
    `security: ${book.probes} probes on ${book.routes.size} routes, ${book.bypassed} got through`,
  );
  for (const [trick, t] of book.tricks) {
    log(`security: ${trick}: ${t.n} bypasses on ${t.routes.size} routes, e.g. ${t.example}`);
  }
  return { routes: book.routes.size, probes: book.probes, bypassed: book.bypassed };
}
