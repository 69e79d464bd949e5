/**
 * How the page talks to qm: every data call carries the API key (kept in `sessionStorage`, so
 * it lasts as long as the tab and is never written to disk by the page), and answers that are
 * not 2xx become an `HttpError` with the message of qm's error envelope. Paths are resolved
 * against the page's parent (`/ui/` → `/`), so qm behind a path prefix still works.
 */
import { errorOfBody, HttpError } from "./errors.ts";

export { HttpError };

const KEY = "qm.api-key";

export function apiKey(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function setApiKey(key: string | null): void {
  try {
    if (key === null) sessionStorage.removeItem(KEY);
    else sessionStorage.setItem(KEY, key);
  } catch {
    // Storage refused (private mode quotas): the key then lasts only until this call fails.
  }
}

/** `/api/status` → the address of qm's API next to this page. */
export function apiUrl(path: string): string {
  return new URL(`..${path}`, location.href).href;
}

export function authHeaders(extra: Record<string, string> = {}): Headers {
  const h = new Headers(extra);
  const key = apiKey();
  if (key) h.set("authorization", `Bearer ${key}`);
  return h;
}

/** A call of qm's API with the key; throws `HttpError` unless it answers 2xx. */
export async function call(
  path: string,
  init: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    signal?: AbortSignal;
  } = {},
): Promise<Response> {
  const res = await fetch(apiUrl(path), {
    method: init.method ?? "GET",
    headers: authHeaders(init.headers),
    body: init.body,
    signal: init.signal,
  });
  if (!res.ok) throw new HttpError(res.status, errorOfBody(res.status, await res.text()));
  return res;
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await call(path, signal ? { signal } : {});
  return (await res.json()) as T;
}

export async function post(path: string): Promise<unknown> {
  const res = await call(path, { method: "POST" });
  return res.json();
}

/** Opens a GET event stream of qm's API; throws `HttpError` unless it answers 2xx. */
export async function openSse(
  path: string,
  signal: AbortSignal,
  headers: Record<string, string> = {},
): Promise<Response> {
  const res = await fetch(apiUrl(path), {
    headers: authHeaders({ accept: "text/event-stream", ...headers }),
    signal,
  });
  if (!res.ok) throw new HttpError(res.status, errorOfBody(res.status, await res.text()));
  return res;
}
