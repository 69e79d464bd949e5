/**
 * Anthropic Messages API routes. Claude Code calls `/v1/messages?beta=true`; routing is on the
 * path only, so the query is accepted (and passed on to native upstreams). `anthropic-version`
 * and `anthropic-beta` are accepted whatever they say (SDK 0.x sends 2023-06-01, 1.x
 * 2026-10-21; Claude Code sends betas qm has never heard of) and never forwarded.
 */
import { Elysia } from "elysia";
import { QmError } from "../../shared/errors.ts";
import { createLogger } from "../../shared/log.ts";
import type { Gateway } from "../gateway.ts";
import type { AnthropicOptions, AnthropicRequest } from "./context.ts";
import { handleCountTokens } from "./count-tokens.ts";
import { anthropicError } from "./errors.ts";
import { handleMessages } from "./messages.ts";

/** Paths whose errors (auth, 404, 405) use Anthropic's envelope. */
export function isAnthropicPath(path: string): boolean {
  return path === "/v1/messages" || path.startsWith("/v1/messages/");
}

const ROUTES: [string, (r: AnthropicRequest) => Promise<Response>][] = [
  ["/v1/messages", handleMessages],
  ["/v1/messages/count_tokens", handleCountTokens],
];

export function anthropicRoutes(gw: Gateway, options: Partial<AnthropicOptions> = {}) {
  const opts: AnthropicOptions = {
    // Anthropic's own pings come about every 10–15 s; Bun's idle limit is 10 s by default.
    pingMs: 10_000,
    log: createLogger(gw.config.server.logLevel),
    ...options,
  };
  const app = new Elysia();
  for (const [path, handle] of ROUTES) {
    app.all(
      path,
      ({ request }) => {
        if (request.method !== "POST") {
          return anthropicError(
            new QmError(
              "method_not_allowed",
              `${request.method} is not allowed on ${path}; use POST`,
            ),
            { allow: "POST" },
          );
        }
        return handle({ gw, request, opts });
      },
      { parse: "none" },
    );
  }
  return app;
}
