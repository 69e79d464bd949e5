/**
 * Readiness polling. The product promise is that a model is served within ~30 ms of its
 * upstream turning healthy, so the default poll interval is 10 ms (llama-swap polls once a
 * second). A refused connection fails in well under a millisecond, so this costs little.
 */
import { delay } from "../shared/delay.ts";

export type HealthOutcome =
  | { kind: "ready" }
  | { kind: "timeout"; lastProbe: string }
  | { kind: "aborted" };

export interface HealthWait {
  url: string;
  intervalMs: number;
  /** `performance.now()` after which the wait gives up. */
  deadline: number;
  signal: AbortSignal;
}

/** One probe never waits longer than this, so a hung endpoint is retried, not awaited. */
const PROBE_TIMEOUT_MS = 1000;

export async function waitHealthy(w: HealthWait): Promise<HealthOutcome> {
  let lastProbe = "no answer yet";
  for (;;) {
    if (w.signal.aborted) return { kind: "aborted" };
    const left = w.deadline - performance.now();
    if (left <= 0) return { kind: "timeout", lastProbe };
    // The last probe may be cut short by the overall deadline rather than by its own timeout.
    const cutByDeadline = left < PROBE_TIMEOUT_MS;
    const probeTimeout = AbortSignal.timeout(Math.max(1, Math.min(left, PROBE_TIMEOUT_MS)));
    try {
      const res = await fetch(w.url, {
        signal: AbortSignal.any([w.signal, probeTimeout]),
        redirect: "manual",
      });
      // Read the body so the connection can be reused by the next probe.
      await res.arrayBuffer();
      if (res.status === 200) return { kind: "ready" };
      lastProbe = `HTTP ${res.status}`;
    } catch (err) {
      if (w.signal.aborted) return { kind: "aborted" };
      if (probeTimeout.aborted && cutByDeadline && lastProbe !== "no answer yet") {
        // Out of time mid-probe: the last real answer says more than "no answer".
        continue;
      }
      lastProbe = probeTimeout.aborted ? "no answer within the probe timeout" : describe(err);
    }
    await delay(Math.min(w.intervalMs, Math.max(0, w.deadline - performance.now())), w.signal);
  }
}

function describe(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  if (code === "ConnectionRefused" || code === "ECONNREFUSED") return "connection refused";
  return err instanceof Error ? err.message : String(err);
}
