/**
 * The peers' background I/O, on injected timers: a qm peer's `GET /api/events` followed (its
 * `event: status` snapshot, then `event: model` changes; resumed with `Last-Event-ID`), with
 * reconnects backing off 1 s … 60 s; where it has no events, its `GET /api/status` polled every
 * `poll_s` (a llama-swap's `/running` and `/v1/models`). A peer marked down is probed with
 * `GET /health` when its backoff passes. What is learnt goes into the table.
 *
 * A peer cannot hurt qm (limits.ts): every answer is read up to `MAX_PEER_ANSWER`, every event
 * up to `MAX_PEER_EVENT` (checked on the bytes before the parser holds them), redirects are
 * never followed (a 3xx is a failed answer: the peer's key must not travel to another host),
 * its model list is capped and checked (discover.ts, said once per peer), and what its events
 * say is applied at most every `APPLY_EVERY_MS` — the latest status and the model changes
 * after it kept, the rest never even parsed — so a flood of events costs qm little.
 */
import { createParser } from "eventsource-parser";
import { peerIdProblem } from "../config/ids.ts";
import type { PeerConfig } from "../config/types.ts";
import { failureCause } from "../proxy/causes.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Logger } from "../shared/log.ts";
import { readAtMost } from "../shared/read-at-most.ts";
import { delay, setTimeoutSignal, type Timers } from "../shared/timer.ts";
import { FIRST_BACKOFF_MS, MAX_BACKOFF_MS } from "./breaker.ts";
import {
  type Discovered,
  droppedLine,
  fromLlamaSwap,
  fromQmModelEvent,
  fromQmStatus,
} from "./discover.ts";
import {
  answerTooLarge,
  EventBound,
  MAX_PEER_ANSWER,
  PeerBoundError,
  ReadBudget,
} from "./limits.ts";
import { PeerNews } from "./news.ts";
import type { Offer } from "./route.ts";
import type { PeerStatusJson, PeerTable } from "./table.ts";
import { peerCredentials, shownUrl } from "./target.ts";

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
  /** What its events said, applied at most every `APPLY_EVERY_MS` (news.ts). */
  news: PeerNews;
}

export class PeerWatch {
  private readonly followed = new Map<string, Followed>();
  private readonly probes = new Map<string, unknown>();
  /** Peers whose dropped model names were logged (once per peer). */
  private readonly dropsSaid = new Set<string>();
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
        news: new PeerNews(this.deps.timers, (status, models) =>
          this.applyNews(config.id, status, models),
        ),
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
      f.news.stop();
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

  /**
   * A GET of the peer, limited to its `timeout_s` on the injected timers and its answer to
   * `MAX_PEER_ANSWER` bytes; a redirect is not followed but refused (an error).
   */
  private async get(c: PeerConfig, path: string): Promise<Response> {
    const limit = setTimeoutSignal(this.deps.timers, c.timeoutMs);
    try {
      const res = await this.fetch(c.url + path, {
        headers: new Headers(peerCredentials(c.apiKey)),
        signal: limit.signal,
        proxy: false,
        redirect: "manual",
      } as RequestInit);
      refuseRedirect(res, path);
      const body = await readAtMost(res, MAX_PEER_ANSWER);
      if (body === null) throw answerTooLarge(path);
      return new Response(body, { status: res.status, headers: res.headers });
    } finally {
      limit.cancel();
    }
  }

  /** What a peer listed that qm left out, logged once per peer. */
  private sayDropped(name: string, found: Discovered): void {
    const line = droppedLine(name, found.dropped);
    if (line === null || this.dropsSaid.has(name)) return;
    this.dropsSaid.add(name);
    this.deps.log.warn(line);
  }

  /** A status read: the table told what the peer serves. */
  private discovered(name: string, found: Discovered): void {
    this.sayDropped(name, found);
    this.table.discovered(name, found.models, found.resident);
    this.table.discoveredAliases(name, found.aliases);
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
          const found = fromQmStatus(await res.json().catch(() => null));
          if (!found) throw new Error(`/api/status answered ${res.status}`);
          this.discovered(name, found);
          this.table.report(name, { ok: true });
        }
      } else {
        const [models, running] = await Promise.all([
          this.get(f.config, "/v1/models").then((r) => r.json().catch(() => null)),
          this.get(f.config, "/running").then((r) => r.json().catch(() => null)),
        ]);
        const found = fromLlamaSwap(models, running);
        if (!found) throw new Error("/v1/models answered no model list");
        this.sayDropped(name, found);
        this.table.discovered(name, found.models, found.resident);
        this.table.report(name, { ok: true });
      }
    } catch (error) {
      if (this.stopped) return;
      // What the stream said before it failed still counts.
      f.news.flush();
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
      redirect: "manual",
    } as RequestInit);
    limit.cancel();
    refuseRedirect(res, "/api/events");
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
        // Sent back as Last-Event-ID: only an id a header can carry, of a sane length.
        if (e.id !== undefined) f.lastEventId = peerIdProblem(e.id) === null ? e.id : null;
        if (e.event === "status") {
          // The latest snapshot replaces what came before it, parsed only when applied.
          f.news.snapshot(e.data);
        } else if (e.event === "model") {
          let data: unknown;
          try {
            data = JSON.parse(e.data);
          } catch {
            return;
          }
          const m = fromQmModelEvent(data);
          if (m === null) return;
          if ("invalid" in m) this.sayDropped(name, dropped({ invalid: 1, example: m.invalid }));
          else if (!f.news.model(m.model, m.offer)) this.sayDropped(name, dropped({ overCap: 1 }));
        }
      },
    });
    const bound = new EventBound();
    const { timers } = this.deps;
    const budget = new ReadBudget(timers.now());
    const decoder = new TextDecoder();
    for await (const chunk of res.body) {
      const over = bound.feed(chunk);
      if (over !== null) {
        abort.abort();
        throw new PeerBoundError(over);
      }
      parser.feed(decoder.decode(chunk, { stream: true }));
      // A peer sending faster than its budget waits, unread, in its socket.
      const wait = budget.take(chunk.length, timers.now());
      if (wait > 0) await delay(wait, abort.signal, timers);
      if (this.stopped) break;
    }
    throw new Error("the event stream ended");
  }

  /** A batch of a peer's news: its latest status, then the model changes after it. */
  private applyNews(name: string, status: string | null, models: ReadonlyMap<string, Offer>) {
    if (this.stopped) return;
    if (status !== null) {
      let data: unknown = null;
      try {
        data = JSON.parse(status);
      } catch {
        // not JSON: nothing known from it
      }
      const found = fromQmStatus(data);
      if (found) this.discovered(name, found);
    }
    for (const [model, offer] of models) {
      if (!this.table.modelChanged(name, model, offer)) {
        this.sayDropped(name, dropped({ overCap: 1 }));
      }
    }
  }
}

/** A `Discovered` that only says what was dropped (one event's worth). */
function dropped(d: { invalid?: number; overCap?: number; example?: string }): Discovered {
  return {
    models: new Map(),
    resident: 0,
    aliases: new Map(),
    dropped: { invalid: d.invalid ?? 0, overCap: d.overCap ?? 0, example: d.example ?? null },
  };
}

/** A peer's 3xx is a failed answer: qm never follows it (nor sends the peer's key along). */
function refuseRedirect(res: Response, path: string): void {
  if (res.status < 300 || res.status >= 400) return;
  void res.body?.cancel().catch(() => {});
  const to = res.headers.get("location");
  throw new Error(
    `${path} answered ${res.status}, a redirect${to ? ` to ${JSON.stringify(shownUrl(to.slice(0, 200)))}` : ""}; qm does not follow a peer's redirects`,
  );
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
