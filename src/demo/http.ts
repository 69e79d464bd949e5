/** Response helpers for the demo upstream; headers are built once, not per request. */

const JSON_HEADERS = { "content-type": "application/json" };

import { SSE_HEADERS } from "../shared/sse.ts";

export function jsonText(body: string, status = 200): Response {
  return new Response(body, { status, headers: JSON_HEADERS });
}

export function json(body: unknown, status = 200): Response {
  return jsonText(JSON.stringify(body), status);
}

/** The OpenAI error envelope: `{"error":{"message","type","param","code"}}`. */
export function openAiError(
  status: number,
  message: string,
  type = status >= 500 ? "server_error" : "invalid_request_error",
  param: string | null = null,
): Response {
  return json({ error: { message, type, param, code: null } }, status);
}

export function sse(body: ReadableStream): Response {
  return new Response(body, { headers: SSE_HEADERS });
}

/** Path of a request URL without parsing the whole URL (hot path). */
export function pathOf(url: string): { path: string; query: string } {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return { path: "/", query: "" };
  const q = url.indexOf("?", start);
  return q < 0
    ? { path: url.slice(start), query: "" }
    : { path: url.slice(start, q), query: url.slice(q + 1) };
}

/** Parses a JSON object body; a string result is the error message for a 400. */
export async function readJsonObject(
  req: Request,
): Promise<[Record<string, unknown>, string] | string> {
  const text = await req.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    return `request body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return "request body must be a JSON object";
  }
  return [body as Record<string, unknown>, text];
}

/** Resolves when the client has gone away (Bun aborts the request's signal then). */
export function untilAborted(req: Request): Promise<void> {
  if (req.signal.aborted) return Promise.resolve();
  return new Promise((resolve) => req.signal.addEventListener("abort", () => resolve()));
}

/** `--stall-after-tokens` on a JSON answer: headers and half the body, then silence. */
export function stalledJson(req: Request, body: string): Response {
  const stream = new ReadableStream({
    type: "direct",
    async pull(controller) {
      controller.write(body.slice(0, Math.floor(body.length / 2)));
      await controller.flush();
      await untilAborted(req);
      controller.close();
    },
  });
  return new Response(stream, { headers: JSON_HEADERS });
}
