/**
 * A fake mistral.rs node (v0.8 multi-model server), modelled on mistralrs-core 0.8.1's own
 * book-keeping so that it errs where the real one does: three sets (`engines` loaded,
 * `unloaded`, `reloading`), and the lifecycle calls `POST /v1/models/{status,reload,unload}`
 * with `{"model_id"}` answering as `mistralrs-server-core`'s handlers do (always HTTP 200):
 * - `unload` takes the engine out *before* it looks for the model's loader config: without one
 *   (stock `mistralrs from-config` multi-model serving, `noLoaderConfig`) it answers
 *   `no_loader_config` and the model is gone from the node (chat then answers 500);
 * - `reload` marks the id `reloading` before it looks the id up in `unloaded`: a model that is
 *   loaded, or an id the node never had, answers `not_found` and stays `reloading` for good
 *   (the id is then listed twice, or appears from nowhere);
 * - `GET /v1/models` lists `reloading` ids, then loaded ones, then the unloaded ones not
 *   reloading (so a loaded id stuck in `reloading` is listed twice), after `default`.
 * A chat request for an unloaded model reloads it first (as `get_sender` does); one for a model
 * the node does not have is a 500 `{"message"}`, outside any OpenAI envelope.
 * In process (`handle`, `fetch`) for tests on the fake clock, or served (`bun
 * tests/support/fake-mistralrs.ts --port N --models a,b [--loaded a] [--key K]
 * [--no-loader-config]`) for end-to-end tests. Loads finish when the test says (`gate`), or at
 * once; nothing here waits on a timer.
 */

export type Status = "loaded" | "unloaded" | "reloading";

export interface FakeMistralrsOptions {
  models: string[];
  /** Loaded at the start (default: none; with `noLoaderConfig`, every model). */
  loaded?: string[];
  /** Required as `Authorization: Bearer KEY` when set. */
  apiKey?: string;
  /** `reload` answers `reloading` at once and loads in the background (default: it waits). */
  asyncReload?: boolean;
  /**
   * Stock `mistralrs from-config` multi-model serving (true): no model has a loader config, so
   * every model is loaded at the start and an unload destroys it (`no_loader_config`). A list:
   * only those models lack one (and are loaded at the start).
   */
  noLoaderConfig?: boolean | string[];
  /** Extra entries in `GET /v1/models`, appended as given (a test's duplicates). */
  extraEntries?: { id: string; status: string }[];
}

export class FakeMistralrs {
  /** Loaded models (the node's `engines`). */
  readonly engines = new Set<string>();
  /** Models unloaded with their loader config kept (the node's `unloaded_models`). */
  readonly unloaded = new Set<string>();
  /** Ids marked as reloading (the node's `reloading_models`); a failed reload leaves its id. */
  readonly reloading = new Set<string>();
  /** Every lifecycle call, as `verb model` (`reload a`, `unload b`, `status a`). */
  readonly calls: string[] = [];
  /** Chat requests per model, and how many reloaded it lazily. */
  readonly chats = new Map<string, number>();
  lazyLoads = 0;
  restarts = 0;
  /** `GET /v1/models` calls answered. */
  lists = 0;
  /** While set, loads wait for it (a test releases them by resolving it). */
  gate: Promise<void> | null = null;
  /** While set, unload answers wait for it (the node is slow to answer). */
  unloadGate: Promise<void> | null = null;
  /** While set, chat answers wait for it (a model stays busy). */
  hold: Promise<void> | null = null;
  /** The node is down: every request is refused (the in-process `fetch` throws). */
  down = false;
  /** The most models resident at once. */
  peak = 0;
  /** Authorization headers seen. */
  readonly keys = new Set<string>();
  /** While set, `reload` of an unloaded model fails with this `internal_error` text. */
  loadError: string | null = null;
  /** Paths whose next request loses its connection before the node sees it. */
  readonly cutNext = new Set<string>();

  constructor(private readonly opts: FakeMistralrsOptions) {
    this.boot();
  }

  /** The node's process starting: what its config loads, nothing reloading. */
  private boot(): void {
    this.engines.clear();
    this.unloaded.clear();
    this.reloading.clear();
    for (const m of this.opts.models) {
      // A model without a loader config can only have been loaded at the start.
      if (this.opts.loaded?.includes(m) || !this.hasLoaderConfig(m)) this.engines.add(m);
      else this.unloaded.add(m);
    }
    this.notePeak();
  }

  private hasLoaderConfig(id: string): boolean {
    const none = this.opts.noLoaderConfig;
    return none === undefined || none === false || (Array.isArray(none) && !none.includes(id));
  }

  /** As if its process restarted. */
  restart(): void {
    this.restarts++;
    this.boot();
  }

  /** What `POST /v1/models/status` says of `id` (reloading first, as the node checks). */
  statusOf(id: string): Status | "not_found" {
    if (this.reloading.has(id)) return "reloading";
    if (this.engines.has(id)) return "loaded";
    if (this.unloaded.has(id)) return "unloaded";
    return "not_found";
  }

  /** Every id and its status, one each (`statusOf`): what a test compares. */
  get status(): Map<string, Status> {
    const out = new Map<string, Status>();
    for (const id of [...this.reloading, ...this.engines, ...this.unloaded]) {
      const s = this.statusOf(id);
      if (s !== "not_found") out.set(id, s);
    }
    return out;
  }

  loaded(): string[] {
    return [...this.engines].sort();
  }

  /** Someone else unloaded it on the node (another client, the node's own admin). */
  unloadOutside(id: string): void {
    if (this.engines.delete(id)) this.unloaded.add(id);
  }

  /** Someone else loaded it on the node. */
  loadOutside(id: string): void {
    if (this.unloaded.delete(id)) this.engines.add(id);
    this.notePeak();
  }

  /** A model that leaves the node's list (taken out of its config by a restart elsewhere). */
  drop(id: string): void {
    this.engines.delete(id);
    this.unloaded.delete(id);
    this.reloading.delete(id);
  }

  /** A `fetch` for qm's injected fetcher: refused while `down`. */
  readonly fetch = async (url: string, init: RequestInit): Promise<Response> => {
    if (this.down) {
      throw Object.assign(new TypeError("Unable to connect"), { code: "ConnectionRefused" });
    }
    const path = new URL(url).pathname;
    if (this.cutNext.delete(path)) {
      throw Object.assign(new TypeError("The socket connection was closed unexpectedly"), {
        code: "ECONNRESET",
      });
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
      this.lists++;
      const entry = (id: string, status: string) => ({
        id,
        object: "model",
        created: 0,
        owned_by: "local",
        status,
      });
      const data = [
        { id: "default", object: "model", created: 0, owned_by: "local" },
        ...[...this.reloading].map((id) => entry(id, "reloading")),
        ...[...this.engines].map((id) => entry(id, "loaded")),
        ...[...this.unloaded]
          .filter((id) => !this.reloading.has(id))
          .map((id) => entry(id, "unloaded")),
        ...(this.opts.extraEntries ?? []).map((e) => entry(e.id, e.status)),
      ];
      return Response.json({ object: "list", data });
    }
    if (req.method === "GET" && path === "/health") return new Response("OK");
    const verb = /^\/v1\/models\/(status|reload|unload)$/.exec(path)?.[1];
    if (req.method === "POST" && verb) {
      const body = (await req.json().catch(() => null)) as { model_id?: unknown } | null;
      const id = typeof body?.model_id === "string" ? body.model_id : "";
      this.calls.push(`${verb} ${id}`);
      const answer = (status: string, error?: string) =>
        Response.json({ model_id: id, status, ...(error === undefined ? {} : { error }) });
      if (verb === "status") return answer(this.statusOf(id));
      if (verb === "unload") {
        if (this.unloadGate) await this.unloadGate;
        return answer(this.unload(id));
      }
      const { status, error } = await this.reload(id);
      return answer(status, error);
    }
    if (req.method === "POST" && path === "/v1/chat/completions") return this.chat(req);
    return Response.json({ error: `no route ${req.method} ${path}` }, { status: 404 });
  }

  /** mistralrs-core 0.8.1 `unload_model`, step by step. */
  private unload(id: string): string {
    if (this.unloaded.has(id)) return "unloaded"; // ModelAlreadyUnloaded
    if (!this.engines.delete(id)) return "not_found";
    // The engine is already out of the map: without a loader config it is simply lost.
    if (!this.hasLoaderConfig(id)) return "no_loader_config";
    this.unloaded.add(id);
    return "unloaded";
  }

  /** mistralrs-core 0.8.1 `reload_model`: `asyncReload` answers while it loads. */
  private async reload(id: string): Promise<{ status: string; error?: string }> {
    if (this.reloading.has(id)) return { status: "reloading" };
    this.reloading.add(id);
    // Looked up after the mark: the early return leaves the id `reloading` for good.
    if (!this.unloaded.has(id)) return { status: "not_found" };
    const load = this.load(id);
    if (this.opts.asyncReload) {
      void load;
      return { status: "reloading" };
    }
    return load;
  }

  private async load(id: string): Promise<{ status: string; error?: string }> {
    if (this.gate) await this.gate;
    const failure = this.loadError;
    if (failure === null && this.unloaded.delete(id)) this.engines.add(id);
    this.reloading.delete(id);
    this.notePeak();
    return failure === null
      ? { status: "loaded" }
      : { status: "internal_error", error: `Failed to load model: ${failure}` };
  }

  private notePeak(): void {
    this.peak = Math.max(this.peak, this.engines.size);
  }

  private async chat(req: Request): Promise<Response> {
    const body = (await req.json().catch(() => null)) as {
      model?: unknown;
      stream?: unknown;
    } | null;
    const model = typeof body?.model === "string" ? body.model : "";
    this.chats.set(model, (this.chats.get(model) ?? 0) + 1);
    if (!this.engines.has(model) && this.unloaded.has(model) && !this.reloading.has(model)) {
      this.lazyLoads++;
      this.reloading.add(model);
      await this.load(model);
    }
    if (!this.engines.has(model)) {
      // The node's error, as its handlers render it: not OpenAI's envelope.
      return Response.json(
        { message: `Model ${model} not found: mistral.rs sender not available.` },
        { status: 500 },
      );
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
  const loaded = arg("loaded");
  const node = new FakeMistralrs({
    models: list(arg("models")),
    ...(loaded === undefined ? {} : { loaded: list(loaded) }),
    ...(arg("key") ? { apiKey: arg("key")! } : {}),
    ...(process.argv.includes("--no-loader-config") ? { noLoaderConfig: true } : {}),
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
