import { Elysia } from "elysia";
import { QmError } from "../shared/errors.ts";
import { anthropicError } from "./anthropic/errors.ts";
import { anthropicRoutes, isAnthropicPath } from "./anthropic/routes.ts";
import { controlRoutes } from "./control/routes.ts";
import type { Gateway } from "./gateway.ts";
import { openaiError } from "./openai/errors.ts";
import { openaiRoutes } from "./openai/routes.ts";

/**
 * One listener's app. Every listener gets its own, all built on the same Gateway (one
 * scheduler). Keys are checked before routing: `/health` stays open for load balancers.
 */
export function buildApp(gw: Gateway) {
  const keys = new Set(gw.config.server.apiKeys);
  const app = new Elysia();
  // Without keys there is nothing to check: no hook, so requests pay nothing for it.
  if (keys.size > 0) {
    app.onRequest(({ request }) => {
      const path = new URL(request.url).pathname;
      if (path === "/health") return;
      const key = presentedKey(request.headers);
      if (key && keys.has(key)) return;
      // Each API answers in its own envelope: the Anthropic SDKs read `error.type`.
      const render = isAnthropicPath(path) ? anthropicError : openaiError;
      return render(
        new QmError(
          "unauthorized",
          key
            ? "invalid API key"
            : "an API key is required: send Authorization: Bearer KEY or x-api-key: KEY",
        ),
      );
    });
  }
  return app
    .use(controlRoutes(gw))
    .use(openaiRoutes(gw))
    .use(anthropicRoutes(gw))
    .onError(({ code, request, error }) => {
      const path = new URL(request.url).pathname;
      const render = isAnthropicPath(path) ? anthropicError : openaiError;
      if (code === "NOT_FOUND") {
        return render(new QmError("not_found", `no route for ${request.method} ${path}`));
      }
      const message = error instanceof Error ? error.message : String(error);
      return render(new QmError("internal", message));
    });
}

function presentedKey(headers: Headers): string | null {
  const auth = headers.get("authorization");
  if (auth?.toLowerCase().startsWith("bearer ")) return auth.slice(7).trim();
  return headers.get("x-api-key");
}
