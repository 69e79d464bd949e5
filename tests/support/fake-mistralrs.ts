/**
 * A fake mistral.rs node (v0.8+ multi-model server): `GET /v1/models` with each model's
 * `status`, `POST /v1/models/{status,reload,unload}` with `{"model_id"}` answering `loaded`,
 * `unloaded`, `reloading` or `not_found`, lazy reload on a chat request to an unloaded model, and
 * `POST /v1/chat/completions` (whole or streamed). In process (`handle`, `fetch`) for tests on
 * the fake clock, or served (`bun tests/support/fake-mistralrs.ts --port N --models a,b
 * [--loaded a] [--key K]`) for end-to-end tests. Loads finish when the test says (`gate`), or at
 * once; nothing here waits on a timer.
 */

export type Status = "loaded" | "unloaded" | "reloading";

export interface FakeMistralrsOptions {
  models: string[];
  /** Loaded at the start (default: none). */
  loaded?: string[];
  /** Required as `Authorization: Bearer KEY` when set. */
  apiKey?: string;
  /** `reload` answers `reloading` at once and loads in the background (default: it waits). */
  asyncReload?: boolean;
}

export class FakeMistralrs {
  readonly status = new Map<string, Status>();
  /** Every lifecycle call, as `verb model` (`reload a`, `unload b`, `status a`). */
  readonly calls: string[] = [];
  /** Chat requests per model, and how many reloaded it lazily. */
  readonly chats = new Map<string, number>();
  lazyLoads = 0;
  restarts = 0;
  /** While set, loads wait for it (a test releases them by resolving it). */
  gate: Promise<void> | null = null;
  /** While set, chat answers wait for it (a model stays busy). */
  hold: Promise<void> | null = null;
  /** The node is down: every request is refused (the in-process `fetch` throws). */
  down = false;
  /** The most models resident at once. */
  peak = 0;
  /** Authorization headers seen. */
  readonly keys = new Set<string>();

  constructor(private readonly opts: FakeMistralrsOptions) {
    for (const m of opts.models) {
      this.status.set(m, opts.loaded?.includes(m) ? "loaded" : "unloaded");
    }
    this.notePeak();
  }

  /** As if its process restarted: every model unloaded (the config's `loaded` come back). */
  restart(): void {
    this.restarts++;
    for (const m of this.status.keys()) {
      this.status.set(m, this.opts.loaded?.includes(m) ? "loaded" : "unloaded");
    }
  }

  loaded(): string[] {
    return [...this.status].filter(([, s]) => s === "loaded").map(([m]) => m);
  }

  /** A `fetch` for qm's injected fetcher: refused while `down`. */
  readonly fetch = async (url: string, init: RequestInit): Promise<Response> => {
    if (this.down) {
      throw Object.assign(new TypeError("Unable to connect"), { code: "ConnectionRefused" });
    }
    return this.handle(new Request(url, init));
  };

  async handle(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    const auth = req.headers.get("authorization");
    if (auth) this.keys.add(auth);
    if (this.opts.apiKey && auth !== `Bearer ${this.opts.apiKey}`) {
      return Response.json({ error: "unauthorized" }, { status: 401 });
    }
    if (req.method === "GET" && path === "/v1/models") {
      const data = [
        { id: "default", object: "model", created: 0, owned_by: "local" },
        ...[...this.status].map(([id, status]) => ({
          id,
          object: "model",
          created: 0,
          owned_by: "local",
          status,
        })),
      ];
      return Response.json({ object: "list", data });
    }
    if (req.method === "GET" && path === "/health") return new Response("ok");
    const verb = /^\/v1\/models\/(status|reload|unload)$/.exec(path)?.[1];
    if (req.method === "POST" && verb) {
      const body = (await req.json().catch(() => null)) as { model_id?: unknown } | null;
      const id = typeof body?.model_id === "string" ? body.model_id : "";
      this.calls.push(`${verb} ${id}`);
      const now = this.status.get(id);
      if (now === undefined) return Response.json({ model_id: id, status: "not_found" });
      if (verb === "unload") {
        this.status.set(id, "unloaded");
        return Response.json({ model_id: id, status: "unloaded" });
      }
      if (verb === "reload") {
        if (now !== "loaded") {
          const load = this.load(id);
          if (this.opts.asyncReload) {
            void load;
            return Response.json({ model_id: id, status: this.status.get(id) });
          }
          await load;
        }
        return Response.json({ model_id: id, status: this.status.get(id) });
      }
      return Response.json({ model_id: id, status: now });
    }
    if (req.method === "POST" && path === "/v1/chat/completions") return this.chat(req);
    return Response.json({ error: `no route ${req.method} ${path}` }, { status: 404 });
  }

  private async load(id: string): Promise<void> {
    this.status.set(id, "reloading");
    if (this.gate) await this.gate;
    if (this.status.get(id) === "reloading") this.status.set(id, "loaded");
    this.notePeak();
  }

  private notePeak(): void {
    this.peak = Math.max(this.peak, this.loaded().length);
  }

  private async chat(req: Request): Promise<Response> {
    const body = (await req.json().catch(() => null)) as {
      model?: unknown;
      stream?: unknown;
    } | null;
    const model = typeof body?.model === "string" ? body.model : "";
    const status = this.status.get(model);
    if (status === undefined) {
      return Response.json(
        { error: { message: `model ${model} not found`, type: "invalid_request_error" } },
        { status: 404 },
      );
    }
    this.chats.set(model, (this.chats.get(model) ?? 0) + 1);
    if (status !== "loaded") {
      this.lazyLoads++;
      await this.load(model);
    }
    if (this.hold) await this.hold;
    const text = `hello from ${model}`;
    if (body?.stream === true) {
      const chunk = (delta: object, finish: string | null) =>
        `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      const sse = `${chunk({ role: "assistant", content: text }, null)}${chunk({}, "stop")}data: [DONE]\n\n`;
      return new Response(sse, { headers: { "content-type": "text/event-stream" } });
    }
    return Response.json({
      id: "c1",
      object: "chat.completion",
      created: 0,
      model,
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
  }
}

if (import.meta.main) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i === -1 ? undefined : process.argv[i + 1];
  };
  const list = (s: string | undefined) => (s ? s.split(",").filter(Boolean) : []);
  const node = new FakeMistralrs({
    models: list(arg("models")),
    loaded: list(arg("loaded")),
    ...(arg("key") ? { apiKey: arg("key")! } : {}),
  });
  // A control route for end-to-end tests: what the node saw, and an outside unload/restart.
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: Number(arg("port") ?? 0),
    fetch: (req) => {
      const path = new URL(req.url).pathname;
      if (path === "/_fake/state") {
        return Response.json({
          status: Object.fromEntries(node.status),
          calls: node.calls,
          peak: node.peak,
          restarts: node.restarts,
          lazy_loads: node.lazyLoads,
        });
      }
      if (path === "/_fake/restart") {
        node.restart();
        return Response.json({ ok: true });
      }
      return node.handle(req);
    },
  });
  console.log(`fake mistral.rs on ${server.port}`);
  const stop = () => {
    server.stop(true);
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
