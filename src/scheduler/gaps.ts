/**
 * Tool gaps: how long each conversation takes between an answer that ended in tool calls and
 * its next request (the one carrying the tool results). The scheduler learns them from its own
 * events (`serveDone` with tool calls, then `request` with the same conversation key), so the
 * cost policy knows how long a hold is likely to idle. And whether a tool result follows at
 * all: the evidence a hold needs (`earnsHold`). See design.md, "Hold or yield by cost".
 */

/** What a hold after a tool-call answer is expected to cost. */
export interface GapEstimate {
  /** The typical gap (median of the recent ones): how long the hold is expected to idle. */
  typicalMs: number;
  /**
   * How long the hold lasts: the longest recent gap, with a margin. Past it the gap is spent
   * and the hold is dropped.
   */
  windowMs: number;
  /**
   * Whose gaps these are: the conversation's own, its model's, every conversation's, or none
   * yet (`prior`: the hold window the request asked for bounds the hold; the cost verdict
   * judges it by the gap so far).
   */
  source: "conversation" | "model" | "all" | "prior";
}

/** Gaps kept per conversation, per model and overall: the most recent ones. */
export const KEPT_GAPS = 8;
/** The hold window is the longest recent gap times this (a gap a little longer still fits). */
export const WINDOW_FACTOR = 1.25;
/** Conversations remembered; the least recently active is forgotten first. */
export const MAX_CONVERSATIONS = 1024;
/** A longer pause is not a tool gap (a person stepped away): it is not recorded. */
export const MAX_GAP_MS = 600_000;

/** Tool-call answers whose fate is kept per model (followed by a tool result or not). */
export const KEPT_FATES = 8;

interface Pending {
  model: string;
  at: number;
  /** Its hold window: not followed within it, it was not followed. Null: no hold asked. */
  windowMs: number | null;
  /** Its fate is in its model's record already (the window passed first). */
  settled: boolean;
}

export class GapBook {
  private readonly conversations = new Map<string, number[]>();
  private readonly models = new Map<string, number[]>();
  private readonly all: number[] = [];
  /** Conversations whose last answer ended in tool calls, and when. */
  private readonly pending = new Map<string, Pending>();
  /** Conversations that have shown a tool result (most recently active last). */
  private readonly looping = new Map<string, true>();
  /** Per model: whether its recent tool-call answers were followed by a tool result. */
  private readonly fates = new Map<string, boolean[]>();

  /**
   * `conversation`'s answer on `model` ended in tool calls at `at`: its next request ends a gap.
   * Not followed within `windowMs` (its hold window; null: none), it counts as not followed.
   */
  answered(conversation: string, model: string, at: number, windowMs: number | null = null): void {
    this.pending.delete(conversation);
    this.pending.set(conversation, { model, at, windowMs, settled: false });
    trim(this.pending);
  }

  /**
   * A request of `conversation` arrived at `at`, carrying a tool result or not (`toolResult`;
   * undefined: not known, taken as carrying one). It settles the fate of the conversation's
   * tool-call answer, and returns the gap since it — a tool gap only when a tool result came.
   */
  asked(conversation: string, at: number, toolResult?: boolean): number | null {
    if (toolResult !== false) {
      this.looping.delete(conversation);
      this.looping.set(conversation, true);
      trim(this.looping);
    }
    const p = this.pending.get(conversation);
    if (p === undefined) return null;
    this.pending.delete(conversation);
    if (!p.settled) this.fate(p.model, toolResult !== false);
    // A person's next turn after a tool-call answer is not a tool gap.
    if (toolResult === false) return null;
    const gap = at - p.at;
    if (gap < 0 || gap > MAX_GAP_MS) return null;
    push(this.conversations, conversation, gap);
    trim(this.conversations);
    push(this.models, p.model, gap);
    this.all.push(gap);
    if (this.all.length > KEPT_GAPS) this.all.shift();
    return gap;
  }

  /**
   * `conversation` is in a tool gap at `now`: it answered in tool calls and has not come back,
   * for no longer than a tool gap lasts (`MAX_GAP_MS`).
   */
  inGap(conversation: string, now: number): boolean {
    const p = this.pending.get(conversation);
    return p !== undefined && now - p.at <= MAX_GAP_MS;
  }

  /**
   * Evidence that a tool-call answer of `conversation` on `model` will be followed by a tool
   * result (design.md, "Evidence of a loop"): the conversation has shown one; or, not having
   * shown one yet, at least half of the model's recent answers whose fate is known were
   * followed (none known: yes). Answers whose window has passed by `now` count as not followed.
   */
  earnsHold(conversation: string, model: string, now: number): boolean {
    this.settle(now);
    return this.followable(conversation, model);
  }

  /** `earnsHold` as of the last `settle`. */
  private followable(conversation: string, model: string): boolean {
    if (this.looping.has(conversation)) return true;
    const fates = this.fates.get(model);
    if (fates === undefined || fates.length === 0) return true;
    return fates.filter(Boolean).length * 2 >= fates.length;
  }

  /** Tool-call answers whose window passed without their conversation's next request: not followed. */
  settle(now: number): void {
    for (const p of this.pending.values()) {
      if (p.settled || p.windowMs === null || p.at + p.windowMs >= now) continue;
      p.settled = true;
      this.fate(p.model, false);
    }
  }

  private fate(model: string, followed: boolean): void {
    const list = this.fates.get(model) ?? [];
    list.push(followed);
    if (list.length > KEPT_FATES) list.shift();
    this.fates.set(model, list);
  }

  /**
   * The longest tool gap in progress at `now`: of the tool-call answers not yet followed, not
   * past their hold window (nor `MAX_GAP_MS`) and still with evidence that a tool result will
   * follow (`earnsHold`), the time since the oldest; 0 if none.
   */
  longestOpen(now: number): number {
    this.settle(now);
    let longest = 0;
    for (const [conversation, p] of this.pending) {
      const since = now - p.at;
      if (since <= longest || since > MAX_GAP_MS) continue;
      if (p.windowMs !== null && since > p.windowMs) continue;
      if (this.followable(conversation, p.model)) longest = since;
    }
    return longest;
  }

  /** `conversation` answered in tool calls and has not come back yet. */
  waiting(conversation: string | null): boolean {
    return conversation !== null && this.pending.has(conversation);
  }

  /**
   * The next gap of `conversation` after an answer on `model`: from its own history, else the
   * model's (other conversations on it), else every conversation's; null when none was seen.
   */
  estimate(conversation: string | null, model: string): GapEstimate | null {
    const own = conversation === null ? undefined : this.conversations.get(conversation);
    if (own !== undefined) return estimateOf(own, "conversation");
    const onModel = this.models.get(model);
    if (onModel !== undefined) return estimateOf(onModel, "model");
    return this.all.length > 0 ? estimateOf(this.all, "all") : null;
  }

  /**
   * The typical gap a waiter of `conversation` will take once served: its own, else every
   * conversation's (one that never got the GPU had no chance to show its own); null: none seen.
   */
  typical(conversation: string | null): number | null {
    const own = conversation === null ? undefined : this.conversations.get(conversation);
    if (own !== undefined) return median(own);
    return this.all.length > 0 ? median(this.all) : null;
  }
}

function estimateOf(gaps: readonly number[], source: GapEstimate["source"]): GapEstimate {
  return {
    typicalMs: median(gaps),
    windowMs: Math.ceil(Math.max(...gaps) * WINDOW_FACTOR),
    source,
  };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Appends `gap` to `key`'s list (most recent last), keeping `KEPT_GAPS`; `key` becomes newest. */
function push(map: Map<string, number[]>, key: string, gap: number): void {
  const list = map.get(key) ?? [];
  map.delete(key);
  list.push(gap);
  if (list.length > KEPT_GAPS) list.shift();
  map.set(key, list);
}

/** Forgets the least recently active entries past `MAX_CONVERSATIONS` (a Map keeps order). */
function trim(map: Map<string, unknown>): void {
  while (map.size > MAX_CONVERSATIONS) map.delete(map.keys().next().value!);
}
