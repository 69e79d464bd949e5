/**
 * The Ollama-compatible routes (Ollama's docs/api.md): `GET /api/version`, `/api/tags`,
 * `/api/ps`, `POST /api/show`; the inference routes `POST /api/chat`, `/api/generate`,
 * `/api/embed`, `/api/embeddings` (`chat.ts`, `embed.ts`); and the model-management routes,
 * which qm refuses: it serves the models in its config. They share `/api/` with qm's control routes, which keep theirs.
 */
import { Elysia } from "elysia";
import { readGgufFile } from "../../gpu/gguf/index.ts";
import type { ApiKey } from "../../keys/api-key.ts";
import { QmError } from "../../shared/errors.ts";
import { createLogger, type Logger } from "../../shared/log.ts";
import { keyOf } from "../edge/caller.ts";
import { visible } from "../edge/visible.ts";
import type { Gateway } from "../gateway.ts";
import { parseJsonObject, readBody } from "../request/body.ts";
import { Capabilities, type CapabilityDeps } from "./capabilities.ts";
import { handleGenerate } from "./chat.ts";
import { handleEmbed } from "./embed.ts";
import { ollamaError } from "./errors.ts";
import { isResident, peerPsEntry, psEntry, showEntry, tagEntry } from "./models.ts";

const GETS = ["/api/version", "/api/tags", "/api/ps"];
const MANAGE = ["/api/pull", "/api/push", "/api/create", "/api/copy", "/api/delete"];
/** The inference routes, on the one exchange. */
const INFERENCE = ["/api/chat", "/api/generate", "/api/embed", "/api/embeddings"];
const POSTS = ["/api/show", ...MANAGE, ...INFERENCE];

/** Paths whose errors use Ollama's envelope. */
export function isOllamaPath(path: string): boolean {
  return GETS.includes(path) || POSTS.includes(path);
}

function notAllowed(method: string, path: string, allow: string): Response {
  return ollamaError(
    new QmError("method_not_allowed", `${method} is not allowed on ${path}; use ${allow}`),
    { allow },
  );
}

export function ollamaRoutes(
  gw: Gateway,
  clock: () => number = Date.now,
  log: Logger = createLogger("error", () => {}),
  capabilityDeps: CapabilityDeps = { fetch: gw.fetch, readGguf: readGgufFile },
) {
  const modifiedAt = new Date(clock()).toISOString();
  const capabilities = new Capabilities(capabilityDeps);
  /** The running process of a model, by its pid (its `/props` are asked once per process). */
  const pidOf = (id: string) => {
    const s = gw.status().models.find((m) => m.id === id);
    // A ready model without a pid (not started by qm) is one process for as long as it lives.
    return s?.state === "ready" ? (s.pid ?? 0) : null;
  };
  const listed = (key: ApiKey) =>
    Object.values(gw.config.models).filter((m) => !m.unlisted && visible(gw, key, m));
  const peerModels = (key: ApiKey) =>
    (gw.peers?.models() ?? []).filter((r) => visible(gw, key, r.model));
  const answers: Record<string, (key: ApiKey) => unknown> = {
    // Clients gate on it (Codex CLI refuses below 0.13.4): `[ollama] version`.
    "/api/version": () => ({ version: gw.config.ollama.version }),
    // A peer's models are listed by their `PEER/MODEL` names (src/peers).
    "/api/tags": (key) => ({
      models: [...listed(key), ...peerModels(key).map((r) => r.model)].map((m) =>
        tagEntry(m, modifiedAt),
      ),
    }),
    "/api/ps": (key) => {
      const now = clock();
      const models = gw
        .status()
        .models.filter(isResident)
        .flatMap((s) => {
          const m = gw.config.models[s.id];
          return m && !m.unlisted && visible(gw, key, m) ? [psEntry(m, s, modifiedAt, now)] : [];
        });
      // A peer's loaded models, by their `PEER/MODEL` names, while the peer is up (a down
      // peer's last word on its models is stale).
      const peers = gw.peers;
      for (const r of peerModels(key)) {
        if (r.state === "ready" && peers?.health(r.model.peer!.peer) === "up") {
          models.push(peerPsEntry(r.model, modifiedAt));
        }
      }
      return { models };
    },
  };
  const app = new Elysia();
  for (const path of GETS) {
    app.all(path, ({ request }) =>
      request.method === "GET"
        ? Response.json(answers[path]!(keyOf(request)))
        : notAllowed(request.method, path, "GET"),
    );
  }
  for (const path of MANAGE) {
    app.all(
      path,
      ({ request }) =>
        request.method === "POST" || (path === "/api/delete" && request.method === "DELETE")
          ? ollamaError(
              new QmError(
                "forbidden",
                `${path} is not supported: qm serves the models in its config (edit it to add or remove one)`,
              ),
            )
          : notAllowed(request.method, path, "POST"),
      { parse: "none" },
    );
  }
  const ctx = { gw, log };
  const handlers: Record<string, (request: Request) => Promise<Response>> = {
    "/api/chat": (r) => handleGenerate(ctx, r, "chat"),
    "/api/generate": (r) => handleGenerate(ctx, r, "generate"),
    "/api/embed": (r) => handleEmbed(ctx, r, "embed"),
    "/api/embeddings": (r) => handleEmbed(ctx, r, "embeddings"),
  };
  for (const path of INFERENCE) {
    app.all(
      path,
      ({ request }) =>
        request.method === "POST"
          ? handlers[path]!(request)
          : notAllowed(request.method, path, "POST"),
      { parse: "none" },
    );
  }
  app.all(
    "/api/show",
    async ({ request }) => {
      if (request.method !== "POST") return notAllowed(request.method, "/api/show", "POST");
      try {
        const body = parseJsonObject(await readBody(request, gw.config.server.maxBodyBytes));
        const name = body.model ?? body.name;
        if (typeof name !== "string" || name === "") {
          throw new QmError("bad_request", 'the request has no "model" string');
        }
        // A peer's model is described from the routing table (bare, alias or `PEER/MODEL`,
        // the peer's health aside): nothing is sent to the peer.
        const key = keyOf(request);
        const byName = (n: string) => {
          const m = gw.resolve(n) ?? gw.peers?.lookup(n);
          // A model the key may not use is not found, as a name that names nothing.
          return m && visible(gw, key, m) ? m : undefined;
        };
        const model = byName(name) ?? byName(name.replace(/:latest$/, ""));
        if (!model) throw new QmError("model_not_found", `model "${name}" not found`);
        const pid = model.peer ? null : pidOf(model.id);
        return Response.json(showEntry(model, modifiedAt, await capabilities.of(model, pid)));
      } catch (err) {
        return ollamaError(err instanceof QmError ? err : new QmError("internal", String(err)));
      }
    },
    { parse: "none" },
  );
  return app;
}
