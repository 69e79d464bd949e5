/**
 * The peers' background I/O, on injected timers: a qm peer's `GET /api/events` followed (its
 * `event: status` snapshot, then `event: model` changes; resumed with `Last-Event-ID`), with
 * reconnects backing off 1 s … 60 s; where it has no events, its `GET /api/status` polled every
 * `poll_s` (a llama-swap's `/running` and `/v1/models`). A peer marked down is probed with
 * `GET /health` when its backoff passes. What is learnt goes into the table.
 */
import { createParser } from "eventsource-parser";
import type { PeerConfig } from "../config/types.ts";
import { failureCause } from "../proxy/causes.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Logger } from "../shared/log.ts";
import { setTimeoutSignal, type Timers } from "../shared/timer.ts";
import { FIRST_BACKOFF_MS, MAX_BACKOFF_MS } from "./breaker.ts";
import { fromLlamaSwap, fromQmModelEvent, fromQmStatus } from "./discover.ts";
import type { PeerStatusJson, PeerTable } from "./table.ts";
import { peerCredentials } from "./target.ts";

export interface WatchDeps {
  timers: Timers;
  log: Logger;
  /** Default: the global fetch. */
  fetch?: Fetch;
}

type Mode = "events" | "status" | "llama-swap";

interface Followed {
  config: PeerConfig;
  mode: Mode;
  lastEventId: string | null;
  backoffMs: number;
  timer: unknown;
  abort: AbortController | null;
}

export class PeerWatch {
  private readonly followed = new Map<string, Followed>();
  private readonly probes = new Map<string, unknown>();
  private stopped = false;
  private readonly fetch: Fetch;

  constructor(
    private readonly table: PeerTable,
    private readonly deps: WatchDeps,
  ) {
    this.fetch = deps.fetch ?? fetch;
  }

  start(): void {
    for (const config of this.table.configs()) {
      if (config.kind !== "qm") continue;
      const f: Followed = {
        config,
        mode: "events",
        lastEventId: null,
        backoffMs: 0,
        timer: null,
        abort: null,
      };
      this.followed.set(config.id, f);
      void this.follow(f);
    }
  }

  stop(): void {
    this.stopped = true;
    for (const f of this.followed.values()) {
      f.abort?.abort();
      if (f.timer !== null) this.deps.timers.clear(f.timer);
    }
    for (const t of this.probes.values()) this.deps.timers.clear(t);
    this.probes.clear();
  }

  /** The table's news of a peer: one that went down is probed once its backoff passes. */
  changed(s: PeerStatusJson): void {
    // A managed node is followed by its own poll (src/runtime/nodes.ts).
    if (this.stopped || s.state !== "down" || s.kind === "mistralrs") return;
    const old = this.probes.get(s.name);
    if (old !== undefined) this.deps.timers.clear(old);
    const wait = Math.max(0, this.table.downUntil(s.name) - this.deps.timers.now());
    this.probes.set(
      s.name,
      this.deps.timers.set(() => {
        this.probes.delete(s.name);
        void this.probe(s.name);
      }, wait),
    );
  }

  private config(name: string): PeerConfig | undefined {
    return this.table.configs().find((c) => c.id === name);
  }

  private async probe(name: string): Promise<void> {
    const c = this.config(name);
    if (!c || this.stopped || this.table.health(name) !== "probing") return;
    try {
      const res = await this.get(c, "/health");
      this.table.report(
        name,
        res.status < 500 ? { ok: true } : { ok: false, error: `/health answered ${res.status}` },
      );
    } catch (error) {
      this.table.report(name, { ok: false, error: `probe failed: ${describe(error)}` });
    }
  }

  /** A GET of the peer, limited to its `timeout_s` on the injected timers. */
  private async get(c: PeerConfig, path: string): Promise<Response> {
    const limit = setTimeoutSignal(this.deps.timers, c.timeoutMs);
    try {
      const res = await this.fetch(c.url + path, {
        headers: new Headers(peerCredentials(c.apiKey)),
        signal: limit.signal,
        proxy: false,
      } as RequestInit);
      const body = await res.arrayBuffer();
      return new Response(body, { status: res.status, headers: res.headers });
    } finally {
      limit.cancel();
    }
  }

  /** One round of following a qm peer; it always schedules the next. */
  private async follow(f: Followed): Promise<void> {
    if (this.stopped) return;
    const name = f.config.id;
    let next = f.config.pollMs;
    try {
      if (f.mode === "events") {
        // It returns only when the peer has no events (then its status is polled at once);
        // a stream that ends or fails throws, and is reconnected after the backoff.
        await this.events(f);
        next = 0;
      } else if (f.mode === "status") {
        const res = await this.get(f.config, "/api/status");
        if (res.status === 404) {
          f.mode = "llama-swap";
          next = 0;
        } else {
          const found = fromQmStatus(await res.json());
          if (!found) throw new Error(`/api/status answered ${res.status}`);
          this.table.discovered(name, found.models, found.resident);
          this.table.discoveredAliases(name, found.aliases);
          this.table.report(name, { ok: true });
        }
      } else {
        const [models, running] = await Promise.all([
          this.get(f.config, "/v1/models").then((r) => r.json()),
          this.get(f.config, "/running").then((r) => r.json()),
        ]);
        const found = fromLlamaSwap(models, running);
        if (!found) throw new Error("/v1/models answered no model list");
        this.table.discovered(name, found.models, found.resident);
        this.table.report(name, { ok: true });
      }
    } catch (error) {
      if (this.stopped) return;
      this.table.report(name, { ok: false, error: describe(error) });
      next = f.mode === "events" ? this.backoff(f) : f.config.pollMs;
    }
    if (this.stopped) return;
    // Another way to read the peer was found: try it now, not on the next round.
    if (next === 0) return this.follow(f);
    f.timer = this.deps.timers.set(() => {
      f.timer = null;
      void this.follow(f);
    }, next);
  }

  private backoff(f: Followed): number {
    f.backoffMs = f.backoffMs === 0 ? FIRST_BACKOFF_MS : Math.min(f.backoffMs * 2, MAX_BACKOFF_MS);
    return f.backoffMs;
  }

  /** Follows `/api/events`; returns when the peer has none, throws when the stream ends. */
  private async events(f: Followed): Promise<void> {
    const name = f.config.id;
    const abort = new AbortController();
    f.abort = abort;
    const headers = new Headers([
      ...peerCredentials(f.config.apiKey),
      ["accept", "text/event-stream"],
    ]);
    if (f.lastEventId !== null) headers.set("last-event-id", f.lastEventId);
    // Only the connection and the first byte are limited: the stream itself lasts for ever.
    const limit = setTimeoutSignal(this.deps.timers, f.config.timeoutMs);
    const res = await this.fetch(`${f.config.url}/api/events`, {
      headers,
      signal: AbortSignal.any([abort.signal, limit.signal]),
      proxy: false,
      timeout: false,
    } as RequestInit);
    limit.cancel();
    if (res.status === 404 || !(res.headers.get("content-type") ?? "").includes("event-stream")) {
      await res.body?.cancel();
      if (!res.ok && res.status !== 404) throw new Error(`/api/events answered ${res.status}`);
      f.mode = "status";
      return;
    }
    if (!res.body) throw new Error("/api/events answered no body");
    f.backoffMs = 0;
    this.table.report(name, { ok: true });
    const parser = createParser({
      onEvent: (e) => {
        if (e.id !== undefined) f.lastEventId = e.id;
        let data: unknown;
        try {
          data = JSON.parse(e.data);
        } catch {
          return;
        }
        if (e.event === "status") {
          const found = fromQmStatus(data);
          if (found) {
            this.table.discovered(name, found.models, found.resident);
            this.table.discoveredAliases(name, found.aliases);
          }
        } else if (e.event === "model") {
          const m = fromQmModelEvent(data);
          if (m) this.table.modelChanged(name, m.model, m.offer);
        }
      },
    });
    const decoder = new TextDecoder();
    for await (const chunk of res.body) parser.feed(decoder.decode(chunk, { stream: true }));
    throw new Error("the event stream ended");
  }
}

/**
 * A failure in qm's words: a network error (it has a `code`) as a one-line cause (`connection
 * reset`), never the runtime's own text; qm's own errors (`/api/status answered 500`) as said.
 */
export function describe(error: unknown): string {
  const code =
    typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code === "string") return failureCause(error);
  if (error instanceof Error) return error.message;
  return String(error);
}
