/**
 * Hostile raw HTTP/1.1 requests for the fuzz suite: a route (every route qm has, and some it
 * has not), then one to three mutations of its method, request-target, version, Host, other
 * headers, framing or body. Seeded, so a run can be repeated (`HARDEN_SEED`).
 */

import { isOllamaPath } from "../../src/api/ollama/routes.ts";
import type { Envelope } from "./verdict.ts";

export const OK_MODEL = "z-ok";
/** A model that cannot start: a 502/503/504/529 naming it is a legitimate answer. */
export const BROKEN_MODEL = "z-broken";
/**
 * The model the lease routes pin. Kept apart from OK_MODEL on purpose: an unload of a leased
 * model waits for its leases (up to their TTL, 10 min by default), and so does every request
 * for it meanwhile; that would turn unrelated fuzz requests into timeouts.
 */
export const LEASE_MODEL = "z-lease";

export type Rng = () => number;

/** mulberry32: small, fast, good enough to pick mutations. */
export function rng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

export const pickWith =
  (r: Rng) =>
  <T>(xs: readonly T[]): T =>
    xs[Math.floor(r() * xs.length)] as T;

const chat = (model: string, extra = {}) =>
  JSON.stringify({ model, max_tokens: 4, messages: [{ role: "user", content: "hi" }], ...extra });
const anthropic = (model: string, extra = {}) =>
  JSON.stringify({ model, max_tokens: 4, messages: [{ role: "user", content: "hi" }], ...extra });

const responses = (model: string, extra = {}) =>
  JSON.stringify({ model, max_output_tokens: 4, input: "hi", ...extra });
const ollama = (model: string, extra = {}) =>
  JSON.stringify({
    model,
    options: { num_predict: 4 },
    messages: [{ role: "user", content: "hi" }],
    ...extra,
  });

export interface Route {
  method: string;
  path: string;
  body?: (model: string) => string;
  /**
   * Relative weight (default 1): routes that unload the fuzz model are rare. `POST
   * /api/models/unload` is left out: it would unload the leased model, and an unload that
   * waits on a lease stalls every later request for that model (the faults suite checks it).
   */
  weight?: number;
}

export const FUZZ_ROUTES: Route[] = [
  { method: "POST", path: "/v1/chat/completions", body: (m) => chat(m), weight: 4 },
  {
    method: "POST",
    path: "/v1/chat/completions",
    body: (m) => chat(m, { stream: true }),
    weight: 2,
  },
  {
    method: "POST",
    path: "/v1/completions",
    body: (m) => JSON.stringify({ model: m, prompt: "hi", max_tokens: 4 }),
  },
  {
    method: "POST",
    path: "/v1/embeddings",
    body: (m) => JSON.stringify({ model: m, input: "hi" }),
  },
  {
    method: "POST",
    path: "/v1/rerank",
    body: (m) => JSON.stringify({ model: m, query: "q", documents: ["a"] }),
  },
  { method: "POST", path: "/v1/reranking", body: (m) => JSON.stringify({ model: m, query: "q" }) },
  {
    method: "POST",
    path: "/v1/audio/speech",
    body: (m) => JSON.stringify({ model: m, input: "hi" }),
  },
  { method: "POST", path: "/v1/audio/transcriptions", body: (m) => JSON.stringify({ model: m }) },
  {
    method: "POST",
    path: "/v1/images/generations",
    body: (m) => JSON.stringify({ model: m, prompt: "a" }),
  },
  { method: "POST", path: "/v1/messages", body: (m) => anthropic(m), weight: 4 },
  { method: "POST", path: "/v1/messages", body: (m) => anthropic(m, { stream: true }), weight: 2 },
  { method: "POST", path: "/v1/messages/count_tokens", body: (m) => anthropic(m), weight: 2 },
  { method: "POST", path: "/v1/messages/nope", body: (m) => anthropic(m) },
  { method: "GET", path: "/v1/models" },
  { method: "GET", path: `/v1/models/${OK_MODEL}` },
  { method: "POST", path: "/chat/completions", body: (m) => chat(m) },
  { method: "GET", path: "/models" },
  { method: "POST", path: "/v1/responses", body: (m) => responses(m), weight: 2 },
  { method: "POST", path: "/v1/responses", body: (m) => responses(m, { stream: true }), weight: 2 },
  { method: "GET", path: "/v1/responses/resp_nope" },
  { method: "DELETE", path: "/v1/responses/resp_nope" },
  { method: "POST", path: "/api/chat", body: (m) => ollama(m), weight: 2 },
  { method: "POST", path: "/api/chat", body: (m) => ollama(m, { stream: false }) },
  {
    method: "POST",
    path: "/api/generate",
    body: (m) => JSON.stringify({ model: m, prompt: "hi" }),
  },
  { method: "POST", path: "/api/embed", body: (m) => JSON.stringify({ model: m, input: "hi" }) },
  {
    method: "POST",
    path: "/api/embeddings",
    body: (m) => JSON.stringify({ model: m, prompt: "x" }),
  },
  { method: "POST", path: "/api/show", body: (m) => JSON.stringify({ model: m }) },
  { method: "GET", path: "/api/tags" },
  { method: "GET", path: "/api/ps" },
  { method: "POST", path: "/api/pull", body: (m) => JSON.stringify({ model: m }) },
  { method: "GET", path: `/upstream/${OK_MODEL}/health` },
  {
    method: "POST",
    path: `/upstream/${OK_MODEL}/v1/chat/completions`,
    body: (m) => chat(m),
    weight: 2,
  },
  { method: "GET", path: `/upstream/${OK_MODEL}/v1/models` },
  { method: "GET", path: "/upstream/nope/x" },
  { method: "GET", path: "/upstream/" },
  { method: "GET", path: "/health", weight: 2 },
  { method: "GET", path: "/api/status", weight: 2 },
  { method: "GET", path: "/api/events" },
  { method: "GET", path: "/running" },
  { method: "POST", path: `/api/models/${OK_MODEL}/load` },
  { method: "POST", path: `/api/models/${OK_MODEL}/unload`, weight: 0.05 },
  { method: "POST", path: `/api/models/${BROKEN_MODEL}/load`, weight: 0.3 },
  { method: "POST", path: "/api/models/nope/load" },
  { method: "GET", path: `/api/models/${OK_MODEL}/logs` },
  { method: "POST", path: `/api/models/${LEASE_MODEL}/lease`, body: () => '{"ttl_s":5}' },
  { method: "POST", path: `/api/models/${LEASE_MODEL}/lease/nope`, body: () => '{"ttl_s":5}' },
  { method: "DELETE", path: `/api/models/${LEASE_MODEL}/lease/nope` },
  { method: "GET", path: "/" },
  { method: "GET", path: "/nope" },
  { method: "POST", path: "/v1/", body: (m) => chat(m) },
  { method: "GET", path: "/api/models" },
  { method: "POST", path: "/v2/chat/completions", body: (m) => chat(m) },
];

/** One request under construction. */
export interface Draft {
  method: string;
  target: string;
  version: string;
  /** Header lines without CRLF; Host first. Content-Length is added at the end unless set. */
  headers: string[];
  body: string;
  /** Framing already decided by a mutation: no Content-Length is added. */
  framed: boolean;
  labels: string[];
}

/** A plain, valid request for `route`, to be mutated. */
export function draft(route: Route, port: number, model = OK_MODEL): Draft {
  const body = route.body?.(model) ?? "";
  const headers = [`Host: 127.0.0.1:${port}`, "Connection: close"];
  if (body) headers.push("Content-Type: application/json");
  if (route.path.startsWith("/v1/messages")) headers.push("anthropic-version: 2023-06-01");
  return {
    method: route.method,
    target: route.path,
    version: "HTTP/1.1",
    headers,
    body,
    framed: false,
    labels: [],
  };
}

/** The request's bytes as a latin1 string (one char = one byte). */
export function assemble(d: Draft): string {
  const headers = [...d.headers];
  const hasBody = d.body.length > 0 || ["POST", "PUT", "PATCH"].includes(d.method);
  if (!d.framed && hasBody) headers.push(`Content-Length: ${d.body.length}`);
  const line = [d.method, d.target, d.version].filter((x) => x !== "").join(" ");
  return `${line}\r\n${headers.map((h) => `${h}\r\n`).join("")}\r\n${d.body}`;
}

/** Picks a route by weight. */
export function pickRoute(r: Rng): Route {
  const total = FUZZ_ROUTES.reduce((n, x) => n + (x.weight ?? 1), 0);
  let at = r() * total;
  for (const route of FUZZ_ROUTES) {
    at -= route.weight ?? 1;
    if (at <= 0) return route;
  }
  return FUZZ_ROUTES[0] as Route;
}

/**
 * The envelope an error for this request-target must use: Anthropic's on /v1/messages and
 * below, OpenAI's elsewhere. Where the target is ambiguous (dot segments, escapes, case, odd
 * bytes — a server may fairly resolve it either way), either envelope is accepted.
 */
export function envelopeFor(target: string): Envelope {
  let path = target;
  const abs = /^[a-z]+:\/\/[^/]*/i.exec(path);
  if (abs) path = path.slice(abs[0].length) || "/";
  path = path.split("#")[0]?.split("?")[0] ?? "";
  const anthropic = path === "/v1/messages" || path.startsWith("/v1/messages/");
  if (/%|\.\.|\/\/|\\|;|[^\x21-\x7e]|\/\.(\/|$)/.test(path)) return "either";
  if (path.toLowerCase().startsWith("/v1/messages") && !anthropic) return "either";
  if (isOllamaPath(path)) return "ollama";
  return anthropic ? "anthropic" : "openai";
}
