/**
 * The dashboard's picture of qm: the last status, the recent requests, and where the event
 * stream is. `applyEvent` folds one `/api/events` event into it (pure: the clock is an argument)
 * and says whether the status should be read again — a state change or a finished request moves
 * figures (in-flight, VRAM used, load expectations) that the event itself does not carry.
 */
import { duration } from "./format.ts";
import type { ModelState, ModelStatus, RequestRecord, Status } from "./wire.ts";

/** Recent requests kept for the Activity and Performance pages (the DOM shows fewer). */
export const MAX_REQUESTS = 500;

export interface Dash {
  status: Status | null;
  /** Newest first. */
  requests: RequestRecord[];
  /** The id of the last event applied (sent back as `Last-Event-ID` on reconnect); 0: none. */
  lastEventId: number;
  /** When each loading model's load began, in this page's clock (ms): progress ticks from it. */
  loadStart: Record<string, number>;
}

export const EMPTY: Dash = { status: null, requests: [], lastEventId: 0, loadStart: {} };

export interface SseEvent {
  event?: string | undefined;
  data: string;
  id?: string | undefined;
}

/** A fresh status (from `GET /api/status` or `event: status`) read at `now`. */
export function withStatus(d: Dash, status: Status, now: number): Dash {
  const loadStart: Record<string, number> = {};
  for (const m of status.models) {
    if (m.load) loadStart[m.id] = d.loadStart[m.id] ?? now - m.load.elapsed_ms;
  }
  return { ...d, status, loadStart };
}

/** The activity log as `GET /api/requests` answered it (newest first). */
export function withRequests(d: Dash, requests: RequestRecord[]): Dash {
  return { ...d, requests: requests.slice(0, MAX_REQUESTS) };
}

export function applyEvent(d: Dash, e: SseEvent, now: number): { dash: Dash; refetch: boolean } {
  const id = e.id === undefined ? Number.NaN : Number(e.id);
  const base = Number.isSafeInteger(id) && id > 0 ? { ...d, lastEventId: id } : d;
  let data: unknown;
  try {
    data = JSON.parse(e.data);
  } catch {
    return { dash: base, refetch: false };
  }
  if (typeof data !== "object" || data === null) return { dash: base, refetch: false };
  switch (e.event) {
    case "status":
      return { dash: withStatus(base, data as Status, now), refetch: false };
    case "model":
      return { dash: withModelEvent(base, data as ModelEvent, now), refetch: true };
    case "load":
      return { dash: withLoadEvent(base, data as LoadEvent, now), refetch: false };
    case "request": {
      const { type: _, ...record } = data as RequestRecord & { type?: string };
      const requests = [record as RequestRecord, ...base.requests].slice(0, MAX_REQUESTS);
      return { dash: { ...base, requests }, refetch: true };
    }
    case "config":
      // A config reload may add, remove or change models: read the status afresh.
      return { dash: base, refetch: true };
    case "hold":
      // Granted, expired, preempted or dropped: the status has its deadline, why, and how the
      // last one ended.
      return { dash: base, refetch: true };
    default:
      return { dash: base, refetch: false };
  }
}

interface LoadEvent {
  model: string;
  elapsed_ms: number;
  expected_ms: number | null;
  progress: number | null;
  stage: string | null;
}

/** A load's figures as qm reports them (its log's stage included), for a model still loading. */
function withLoadEvent(d: Dash, e: LoadEvent, now: number): Dash {
  if (!d.status || typeof e.model !== "string" || typeof e.elapsed_ms !== "number") return d;
  let changed = false;
  const models = d.status.models.map((m): ModelStatus => {
    if (m.id !== e.model || m.state !== "starting") return m;
    changed = true;
    return {
      ...m,
      load: {
        elapsed_ms: e.elapsed_ms,
        expected_ms: e.expected_ms ?? null,
        progress: e.progress ?? null,
        stage: e.stage ?? null,
      },
    };
  });
  if (!changed) return d;
  const loadStart = { ...d.loadStart, [e.model]: now - e.elapsed_ms };
  return { ...d, status: { ...d.status, models }, loadStart };
}

interface ModelEvent {
  model: string;
  state: ModelState;
  detail: string | null;
  expected_load_ms?: number | null;
}

function withModelEvent(d: Dash, e: ModelEvent, now: number): Dash {
  if (!d.status || typeof e.model !== "string") return d;
  const loadStart = { ...d.loadStart };
  const models = d.status.models.map((m): ModelStatus => {
    if (m.id !== e.model) return m;
    if (e.state === "starting") {
      loadStart[m.id] = now;
      const expected = e.expected_load_ms ?? null;
      return {
        ...m,
        state: e.state,
        last_error: null,
        load: { elapsed_ms: 0, expected_ms: expected, progress: expected ? 0 : null },
      };
    }
    delete loadStart[m.id];
    return {
      ...m,
      state: e.state,
      load: null,
      last_error: e.state === "failed" ? (e.detail ?? m.last_error) : m.last_error,
      pid: e.state === "stopped" || e.state === "failed" ? null : m.pid,
    };
  });
  return { ...d, status: { ...d.status, models }, loadStart };
}

/**
 * How far a model's load is (0..0.99) at `now`, ticking on between status reads: the larger of
 * the time since it began over the time its loads usually take, and the progress qm last
 * reported (which its log's stage may have moved further). Null when it is not loading, or
 * when neither is known (a first load whose log shows no stage).
 */
export function loadFraction(d: Dash, m: ModelStatus, now: number): number | null {
  if (!m.load) return null;
  const reported = m.load.progress ?? null;
  if (!m.load.expected_ms) return reported;
  const start = d.loadStart[m.id];
  const elapsed = start === undefined ? m.load.elapsed_ms : now - start;
  const timed = Math.max(0, elapsed / m.load.expected_ms);
  return Math.min(0.99, Math.max(timed, reported ?? 0));
}

/** How long a model's load has run at `now`, ms; null when it is not loading. */
export function loadElapsed(d: Dash, m: ModelStatus, now: number): number | null {
  if (!m.load) return null;
  const start = d.loadStart[m.id];
  return start === undefined ? m.load.elapsed_ms : Math.max(0, now - start);
}

/**
 * The line under a model's hold: while it is held, why (`gap 2.1 s expected, swap 6.3 s`, under
 * `hold_policy = "cost"`); otherwise how its last hold ended (`dropped: cost, 12s ago`); null
 * when there is nothing to say.
 */
export function holdNote(m: ModelStatus, now: number): string | null {
  if (m.held_until_ms !== null && m.held_until_ms > now) return m.held_reason ?? null;
  const end = m.hold_ended;
  if (!end) return null;
  return `${end.how}: ${end.reason}, ${duration(Math.max(0, now - end.at_ms))} ago`;
}

/** Anything that changes by itself in the next seconds (loads, queues, prefetch, requests). */
export function busy(s: Status | null): boolean {
  return !!s?.models.some(
    (m) =>
      m.state === "starting" ||
      m.state === "stopping" ||
      m.inflight > 0 ||
      m.queued > 0 ||
      (m.prefetched ?? 1) < 1,
  );
}
