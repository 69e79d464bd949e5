import type { Config, ModelConfig } from "../config/types.ts";
import type { Clock } from "../shared/clock.ts";
import type { GapEstimate } from "./gaps.ts";
import type { ModelState, RequestKey } from "./types.ts";

export interface ModelEntry {
  readonly id: string;
  state: ModelState;
  /** Granted requests still running on the current process. */
  inflight: number;
  /** Monotonic use stamp (0 = never served): LRU order without a clock. */
  lastUse: number;
  /** Clock time its last request finished, while ready and idle. */
  idleSince: number | null;
  /** Bumped when its process dies: grants from an older generation no longer count. */
  generation: number;
  unloadPending: boolean;
  lastError: string | null;
  /** Clock time until which it may not be evicted (idle-grace hold); 0 = not held. */
  heldUntil: number;
  /** Longest hold asked for by requests that finished since it was last idle. */
  holdCandidateMs: number;
  /**
   * `hold_policy = "cost"`: what the longest candidate was weighed by (set with it), and, while
   * held, what the hold is (`heldUntil` is its deadline). Null otherwise.
   */
  holdCandidate: HoldBasis | null;
  hold: (HoldBasis & { from: number; swapBackMs: number }) | null;
  /**
   * Whose hold it is (design.md, "Fair share", 4): the key of the request whose window the hold
   * has, and while requests are in flight, of the one whose window is the candidate.
   */
  holdKey: RequestKey | null;
  holdCandidateKey: RequestKey | null;
  /** The conversation of that request (`conversationOf`): the loop the hold waits for. */
  holdConversation: string | null;
  holdCandidateConversation: string | null;
  /** How its last hold ended by expiry or by a waiter (for status); kept until the next hold. */
  holdEnded: HoldEnd | null;
  /** Set during a drain: a waiter past its patience needs it idle, so it takes no new work. */
  draining: boolean;
  /** Live settings: a config reload may change them (`ModelTable.update`). */
  concurrencyLimit: number;
  ttlMs: number;
  /** Removed from the config by a reload: it takes no new work and leaves once stopped. */
  retired: boolean;
  /**
   * The idle time-to-live the latest finished request asked for (`keep_alive`), in place of
   * `ttlMs` while the process lives: 0 = stop once idle, negative = never; null = `ttlMs`.
   */
  keepAliveMs: number | null;
  /** Live setting: what evicting it does (`evict`). */
  evictMode: "stop" | "sleep";
  /**
   * Several GPUs: the cards its process was placed on, chosen when its swap started and kept
   * while it holds memory (cleared once it is stopped or failed); null = not placed.
   */
  gpus: number[] | null;
}

/** A cost-policy hold's basis: whose gap it waits for, and the gap expected. */
export interface HoldBasis {
  conversation: string | null;
  /** Typical gap: what the hold is expected to idle. */
  typicalMs: number;
  /** The hold's length: past it the gap is spent. */
  windowMs: number;
  /** Whose gaps the figures come from (`prior`: none seen yet, the configured window's). */
  source: GapEstimate["source"];
}

/**
 * How a hold ended: `expired` (its gap spent, or its loop answered without tool calls),
 * `preempted` (patience) or `dropped` (cost).
 */
export interface HoldEnd {
  change: "expired" | "preempted" | "dropped";
  reason: "gap spent" | "loop ended" | "patience" | "cost" | "fairness" | "priority";
  /** Clock time. */
  at: number;
}

/** How long `m` may stay idle before it is stopped; null = for ever. */
export function idleTtl(m: ModelEntry): number | null {
  if (m.keepAliveMs !== null) return m.keepAliveMs < 0 ? null : m.keepAliveMs;
  return m.ttlMs > 0 ? m.ttlMs : null;
}

/** When idle expiry will stop `m` (clock time), or null: busy, not ready, or no TTL. */
export function idleExpiry(m: ModelEntry): number | null {
  if (m.state !== "ready" || m.inflight > 0 || m.idleSince === null) return null;
  const ttl = idleTtl(m);
  return ttl === null ? null : m.idleSince + ttl;
}

/** The settings a model's entry takes from its config (and from each reload). */
type LiveSettings = Pick<ModelConfig, "id" | "concurrencyLimit" | "ttlS"> &
  Partial<Pick<ModelConfig, "evict">>;

/** The scheduler's per-model book-keeping. Plain data, touched only from scheduler events. */
export class ModelTable {
  private readonly byId = new Map<string, ModelEntry>();
  private tick = 0;
  /**
   * Bumped by every change to which models hold memory or their LRU order (state, use, the
   * table itself): `runningLru` is kept until it moves, and so may the policy's answers be.
   */
  private changes = 0;
  private lru: { at: number; ids: string[] } | null = null;
  private entries: ModelEntry[] | null = null;

  /** Moves whenever `runningLru()` may answer differently. */
  get version(): number {
    return this.changes;
  }

  constructor(
    config: Pick<Config, "models">,
    private readonly clock: Clock,
    private readonly onState: (id: string, state: ModelState, detail?: string) => void,
  ) {
    for (const m of Object.values(config.models)) this.add(m);
  }

  add(m: LiveSettings): void {
    if (this.byId.has(m.id)) return;
    this.changes++;
    this.entries = null;
    this.byId.set(m.id, {
      id: m.id,
      state: "stopped",
      inflight: 0,
      lastUse: 0,
      idleSince: null,
      generation: 0,
      unloadPending: false,
      lastError: null,
      heldUntil: 0,
      holdCandidateMs: 0,
      holdCandidate: null,
      hold: null,
      holdEnded: null,
      holdKey: null,
      holdCandidateKey: null,
      holdConversation: null,
      holdCandidateConversation: null,
      draining: false,
      concurrencyLimit: m.concurrencyLimit,
      ttlMs: m.ttlS * 1000,
      keepAliveMs: null,
      retired: false,
      evictMode: m.evict ?? "stop",
      gpus: null,
    });
  }

  /** A reload: the live settings of a configured model (added when new, un-retired when back). */
  update(m: LiveSettings): void {
    const e = this.byId.get(m.id);
    if (!e) {
      this.add(m);
      return;
    }
    e.concurrencyLimit = m.concurrencyLimit;
    e.ttlMs = m.ttlS * 1000;
    e.evictMode = m.evict ?? "stop";
    if (e.retired) {
      // Back in the config before it was gone: the stop its removal asked for is off.
      e.retired = false;
      e.unloadPending = false;
    }
  }

  /** Forgets a model (a retired one, once stopped). */
  delete(id: string): void {
    this.byId.delete(id);
    this.changes++;
    this.entries = null;
  }

  get(id: string): ModelEntry | undefined {
    return this.byId.get(id);
  }

  /** Every entry, in the order they joined (the same array until one joins or leaves). */
  all(): readonly ModelEntry[] {
    this.entries ??= [...this.byId.values()];
    return this.entries;
  }

  setState(id: string, state: ModelState, detail?: string): void {
    const m = this.byId.get(id);
    if (!m || m.state === state) return;
    m.state = state;
    this.changes++;
    // A hold protects a running process; once it is gone there is nothing to protect.
    if (state !== "ready") {
      m.heldUntil = 0;
      m.holdCandidateMs = 0;
      m.holdCandidate = null;
      m.hold = null;
      m.holdKey = null;
      m.holdCandidateKey = null;
      m.holdConversation = null;
      m.holdCandidateConversation = null;
      // A request's keep-alive is for the process it ran on; a new one starts with `ttl_s`.
      m.keepAliveMs = null;
    }
    // Its memory is gone: the placement with it.
    if (state === "stopped" || state === "failed") m.gpus = null;
    if (state === "failed") m.lastError = detail ?? null;
    else if (state === "ready") m.lastError = null;
    // A model loaded with nothing to serve (an explicit load) is idle from the moment it is ready.
    m.idleSince = state === "ready" && m.inflight === 0 ? this.clock.now() : null;
    this.onState(id, state, detail);
  }

  /** The process died under its requests: forget them, they end with errors of their own. */
  crashed(id: string, detail: string, state: "failed" | "stopped" = "failed"): void {
    const m = this.byId.get(id);
    if (!m) return;
    m.generation++;
    m.inflight = 0;
    m.unloadPending = false;
    this.setState(id, state, detail);
  }

  touch(id: string): void {
    const m = this.byId.get(id);
    if (!m) return;
    m.lastUse = ++this.tick;
    this.changes++;
  }

  adjustInflight(id: string, delta: number): void {
    const m = this.byId.get(id);
    if (!m) return;
    m.inflight += delta;
    if (m.inflight < 0) throw new Error(`in-flight count of ${id} went negative`);
    m.idleSince = m.inflight === 0 ? this.clock.now() : null;
  }

  hasSlot(id: string): boolean {
    const m = this.byId.get(id);
    return !!m && (m.concurrencyLimit === 0 || m.inflight < m.concurrencyLimit);
  }

  /**
   * Models holding memory (starting, ready, stopping), least-recently-used first. Sleeping
   * ones are not in it: like stopped ones, they hold no GPU memory the policy accounts for.
   */
  runningLru(): string[] {
    if (this.lru?.at !== this.changes) this.lru = { at: this.changes, ids: this.sortLru() };
    return [...this.lru.ids];
  }

  private sortLru(): string[] {
    return this.all()
      .filter((m) => m.state === "starting" || m.state === "ready" || m.state === "stopping")
      .sort((a, b) => a.lastUse - b.lastUse || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((m) => m.id);
  }

  idleExpired(now: number): string[] {
    return this.all()
      .filter((m) => {
        const due = idleExpiry(m);
        return due !== null && due <= now;
      })
      .map((m) => m.id);
  }

  /** The earliest TTL or hold expiry still ahead of `now`, or null. */
  nextDeadline(now: number): number | null {
    let at: number | null = null;
    const consider = (due: number) => {
      if (due > now && (at === null || due < at)) at = due;
    };
    for (const m of this.byId.values()) {
      if (m.state !== "ready") continue;
      if (m.heldUntil > 0) consider(m.heldUntil);
      const due = idleExpiry(m);
      if (due !== null) consider(due);
    }
    return at;
  }

  held(id: string, now: number): boolean {
    const m = this.byId.get(id);
    return !!m && m.heldUntil > now;
  }
}
