import { Elysia } from "elysia";
import { QmError } from "../shared/errors.ts";
import type { Logger } from "../shared/log.ts";
import { uiRoutes } from "../ui/routes.ts";
import { anthropicError } from "./anthropic/errors.ts";
import { ANTHROPIC_MODELS } from "./anthropic/models.ts";
import { anthropicRoutes, isAnthropicPath } from "./anthropic/routes.ts";
import {
  activityRoutes,
  metricsRoutes,
  requestRoute,
  usageRoute,
} from "./control/observe-routes.ts";
import { controlMethods, controlRoutes } from "./control/routes.ts";
import { createEdge } from "./edge/gate.ts";
import { rememberOriginal } from "./edge/idle.ts";
import type { Gateway } from "./gateway.ts";
import { ollamaError } from "./ollama/errors.ts";
import { isOllamaPath, ollamaRoutes } from "./ollama/routes.ts";
import { openaiError } from "./openai/errors.ts";
import { INFERENCE_ROUTES, inferenceRoute, openaiRoutes } from "./openai/routes.ts";
import { responsesRoutes } from "./responses/routes.ts";

/** The routes of one listener, without the edge (tests call `app.handle` on it directly). */
export function buildRoutes(gw: Gateway, log: Logger) {
  return new Elysia()
    .use(controlRoutes(gw, log))
    .use(activityRoutes(gw))
    .use(requestRoute(gw))
    .use(usageRoute(gw))
    .use(gw.config.server.metricsOnApi ? metricsRoutes(gw) : new Elysia())
    .use(openaiRoutes(gw, log, ANTHROPIC_MODELS))
    .use(anthropicRoutes(gw, { log }))
    .use(ollamaRoutes(gw, Date.now, log))
    .use(responsesRoutes(gw, log))
    .use(uiRoutes())
    .onError(({ code, request, error }) => {
      const path = new URL(request.url).pathname;
      const render = isAnthropicPath(path)
        ? anthropicError
        : isOllamaPath(path)
          ? ollamaError
          : openaiError;
      if (code === "NOT_FOUND") {
        const allow = controlMethods(path);
        if (allow) {
          return render(
            new QmError(
              "method_not_allowed",
              `${request.method} is not allowed on ${path}; use ${allow}`,
            ),
            { allow },
          );
        }
        return render(new QmError("not_found", `no route for ${request.method} ${path}`));
      }
      // The cause is for qm's log; a client learns only that qm, not its request, was at fault.
      log.error(
        `${request.method} ${path}: ${error instanceof Error ? error.message : String(error)}`,
      );
      return render(new QmError("internal", "qm failed to handle this request (see its log)"));
    });
}

/**
 * One listener's request handler: the edge (target, Host, Origin, size and key checks) in
 * front of the routes. Every listener gets its own, all built on the same Gateway (one
 * scheduler).
 */
export function buildApp(gw: Gateway, opts: { loopback: boolean; log: Logger }) {
  const routes = buildRoutes(gw, opts.log);
  // The inference routes are exact paths: the edge, which has parsed the path already, hands
  // them to their handler directly (the same handler the router has), skipping a route lookup
  // on the path every client request takes.
  const direct = new Map(
    INFERENCE_ROUTES.map(([path, v1]) => [path, inferenceRoute(gw, path, opts.log, v1)]),
  );
  const edge = createEdge(
    gw,
    (request, path, received, server) => {
      const inference = direct.get(path);
      if (inference === undefined) {
        if (server) rememberOriginal(request, received, server);
        return routes.handle(request);
      }
      // An inference request may wait minutes for its model: no idle timeout from the start
      // (a body that stops arriving has its own limit, `BODY_STALL_MS`).
      server?.timeout(received, 0);
      return inference(request);
    },
    opts,
  );
  return {
    /** For `Bun.serve`: the server is what idle-timeout switches act on. */
    fetch: edge,
    /** Without a socket (tests). */
    handle: (request: Request) => edge(request, null),
  };
}
