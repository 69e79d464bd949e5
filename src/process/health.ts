/**
 * Readiness polling. The product promise is that a model is served within ~30 ms of its
 * upstream turning healthy, so the default poll interval is 10 ms (llama-swap polls once a
 * second). A refused connection fails in well under a millisecond, so this costs little.
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
    const wait = Math.min(w.intervalMs, w.deadline - timers.now());
    if (wait > 0) await delay(wait, w.signal, timers);
  }
}

function describe(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  if (code === "ConnectionRefused" || code === "ECONNREFUSED") return "connection refused";
  return err instanceof Error ? err.message : String(err);
}
