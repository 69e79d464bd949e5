/** The app without a socket: `app.handle(new Request(…))`, as a listener would call it. */
import { buildApp } from "../../src/api/app.ts";
import type { Gateway } from "../../src/api/gateway.ts";
import { createLogger, type LogLevel } from "../../src/shared/log.ts";

export const quietLog = (level: LogLevel = "error") => createLogger(level, () => {});

export interface App {
  handle(r: Request): Promise<Response> | Response;
}

/** A loopback listener's handler (edge and routes) over `gw`; its own log lines are dropped. */
export function appOf(gw: Gateway): App {
  return buildApp(gw, { loopback: true, log: quietLog() });
}

export async function post(
  app: App,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  return app.handle(
    new Request(`http://localhost${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal,
    }),
  );
}

/** A request of any method; `body` is sent as it is. */
export function call(
  app: App,
  method: string,
  path: string,
  body?: string | FormData | ReadableStream<Uint8Array> | null,
  headers: Record<string, string> = {},
): Promise<Response> | Response {
  return app.handle(new Request(`http://localhost${path}`, { method, headers, body }));
}

/** A response body as JSON; tests read whatever fields they check. */
// biome-ignore lint/suspicious/noExplicitAny: test assertions read bodies loosely
export type Body = Record<string, any>;
export const bodyOf = async (res: Response): Promise<Body> => (await res.json()) as Body;
