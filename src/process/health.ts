/**
 * Readiness polling. The product promise is that a model is served within ~30 ms of its
 * upstream turning healthy, so the default poll interval is 10 ms (llama-swap polls once a
 * second). A refused connection fails in well under a millisecond, so this costs little.
 *
 * A line the model prints also asks for the next probe at once (`ProbeNudge`): servers print
 * one as they start to listen or finish loading (llama-server's "server is listening",
 * uvicorn's "Application startup complete", mistral.rs's "Serving on"), so the probe that
 * finds them ready follows it instead of coming up to an interval later. Probes stay at least
 * `MIN_GAP_MS` apart, so a model that prints thousands of lines while it loads is not probed
 * thousands of times.
 *
 * A server that prints nothing when it turns healthy is found by the poll alone, up to an
 * interval late. Early in a load the interval is shorter: at most a fiftieth of the time the
 * load has taken (`loadStartedAt`), at least `MIN_GAP_MS`, so a short load (a small model, a
 * wake) is found at most ~2 % late (a 300 ms load ~3 ms, not 0 – 10; about 80 probes more in
 * its first half second). When its loads so far say when this one should end (`readyAround`: the median of its
 * last loads), probes come every `MIN_GAP_MS` in a window around that time (a twentieth of
 * the load either side, 10 – 250 ms), so such a server is found within ~2 ms, and at most
 * 250 probes more are sent however long the load. Outside the window the interval holds.
 */
import type { Fetch } from "../shared/fetch.ts";
import { delay, realTimers, setTimeoutSignal, type Timers } from "../shared/timer.ts";

export type HealthOutcome =
  | { kind: "ready" }
  | { kind: "timeout"; lastProbe: string }
  | { kind: "aborted" };

export interface HealthWait {
  url: string;
  intervalMs: number;
  /** The time on `timers`' clock after which the wait gives up. */
  deadline: number;
  signal: AbortSignal;
  /** The poll interval, each probe's limit and the deadline run on these; default real. */
  timers?: Timers;
  /** Default: the global fetch. */
  fetch?: Fetch;
  /** Called once, at the first HTTP answer of any status: something listens on the port now. */
  onAnswer?: () => void;
  /** Asks for the next probe early (the model printed a line). */
  nudge?: ProbeNudge;
  /** When the server is expected to turn healthy (see the top of the file); none: unknown. */
  readyAround?: ReadyWindow | null;
  /** When the load began (on `timers`' clock): early probes come closer (the top of the file). */
  loadStartedAt?: number;
}

/** Early in a load, the interval is at most this share of the time the load has taken. */
export const LOAD_SHARE = 50;

/** Probes come every `MIN_GAP_MS` from `at - halfMs` to `at + halfMs` (on the wait's clock). */
export interface ReadyWindow {
  at: number;
  halfMs: number;
}

/** The window's half width for a load expected to take `expectedMs`, from its start. */
export function readyWindow(startedAt: number, expectedMs: number | null): ReadyWindow | null {
  if (expectedMs === null || !(expectedMs >= 0)) return null;
  return { at: startedAt + expectedMs, halfMs: Math.min(250, Math.max(10, expectedMs / 20)) };
}

/** A load's probe timing: closer early on, and around its expected end when it is known. */
export function probeTiming(loadStartedAt: number, expectedMs: number | null) {
  return { readyAround: readyWindow(loadStartedAt, expectedMs), loadStartedAt };
}

/**
 * How long to wait at `now` before the next probe: the interval, shorter early in a load
 * (`loadStartedAt`) and in the window.
 */
export function nextProbeIn(
  now: number,
  intervalMs: number,
  around?: ReadyWindow | null,
  loadStartedAt?: number,
): number {
  const base =
    loadStartedAt === undefined
      ? intervalMs
      : Math.min(intervalMs, Math.max(MIN_GAP_MS, (now - loadStartedAt) / LOAD_SHARE));
  if (!around) return base;
  const from = around.at - around.halfMs;
  if (now >= around.at + around.halfMs) return base;
  if (now >= from) return Math.min(base, MIN_GAP_MS);
  return Math.min(base, from - now);
}

/** Nudged probes are this far apart at least, after the one before ended. */
export const MIN_GAP_MS = 2;

/** Lets the model's output end the wait between two probes early (see the top of the file). */
export class ProbeNudge {
  private wake: (() => void) | null = null;
  private early = false;

  /** The next probe now, or as soon as the one under way has ended and `MIN_GAP_MS` passed. */
  now(): void {
    if (this.wake) this.wake();
    else this.early = true;
  }

  /**
   * Waits `ms` on `timers`, or `MIN_GAP_MS` when nudged (a nudge during the probe before
   * counts); ends at once when `signal` aborts.
   */
  wait(ms: number, signal: AbortSignal, timers: Timers): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const began = timers.now();
      const done = () => {
        timers.clear(timer);
        signal.removeEventListener("abort", done);
        this.wake = null;
        resolve();
      };
      const early = () => {
        this.wake = () => {}; // once per wait: later lines change nothing
        const left = began + MIN_GAP_MS - timers.now();
        if (left >= ms - (timers.now() - began)) return; // the interval ends sooner anyway
        timers.clear(timer);
        timer = timers.set(done, Math.max(0, left));
      };
      let timer = timers.set(done, ms);
      signal.addEventListener("abort", done, { once: true });
      if (this.early) {
        this.early = false;
        early();
      } else {
        this.wake = early;
      }
    });
  }
}

/** One probe never waits longer than this, so a hung endpoint is retried, not awaited. */
const PROBE_TIMEOUT_MS = 1000;

export async function waitHealthy(w: HealthWait): Promise<HealthOutcome> {
  const timers = w.timers ?? realTimers;
  const send = w.fetch ?? fetch;
  let lastProbe = "no answer yet";
  let answered = false;
  for (;;) {
    if (w.signal.aborted) return { kind: "aborted" };
    const left = w.deadline - timers.now();
    if (left <= 0) return { kind: "timeout", lastProbe };
    // The last probe may be cut short by the overall deadline rather than by its own timeout.
    const cutByDeadline = left < PROBE_TIMEOUT_MS;
    const probe = setTimeoutSignal(timers, Math.max(1, Math.min(left, PROBE_TIMEOUT_MS)));
    try {
      const res = await send(w.url, {
        signal: AbortSignal.any([w.signal, probe.signal]),
        redirect: "manual",
      });
      if (!answered) {
        answered = true;
        w.onAnswer?.();
      }
      // Read the body so the connection can be reused by the next probe.
      await res.arrayBuffer();
      if (res.status === 200) return { kind: "ready" };
      lastProbe = `HTTP ${res.status}`;
    } catch (err) {
      if (w.signal.aborted) return { kind: "aborted" };
      if (probe.signal.aborted && cutByDeadline && lastProbe !== "no answer yet") {
        // Out of time mid-probe: the last real answer says more than "no answer".
        continue;
      }
      lastProbe = probe.signal.aborted ? "no answer within the probe timeout" : describe(err);
    } finally {
      probe.cancel();
    }
    const now = timers.now();
    const next = nextProbeIn(now, w.intervalMs, w.readyAround, w.loadStartedAt);
    const wait = Math.min(next, w.deadline - now);
    if (wait > 0) {
      await (w.nudge ? w.nudge.wait(wait, w.signal, timers) : delay(wait, w.signal, timers));
    }
  }
}

function describe(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  if (code === "ConnectionRefused" || code === "ECONNREFUSED") return "connection refused";
  return err instanceof Error ? err.message : String(err);
}
