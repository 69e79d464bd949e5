import { QmError } from "../shared/errors.ts";
import { sseComment } from "../shared/sse.ts";
import { every } from "../shared/timer.ts";
import { upstreamFailure } from "./causes.ts";
import { sseError } from "./forward.ts";

/**
 * The wait-status placeholder: a streaming request whose model cannot serve yet gets its
 * `200 text/event-stream` at once and, until the model answers, SSE comment lines only.
 * Comments (`: …`) are dropped by every conforming parser (WHATWG HTML §9.2.6), so no client
 * can mistake them for model output; `: qm-status: …` is the machine-readable one.
 */
export interface WaitProgress {
  onPosition(position: number): void;
  onLoading(): void;
}

/** A load in progress, as the runtime measures it (`runtime/load-times.ts`). */
export interface LoadProgress {
  elapsedMs: number;
  /** The median of the model's last loads; null before its first. */
  expectedMs: number | null;
  /**
   * The fraction done (0–0.99): the larger of the time's and the model's log stage's, never
   * going back; null when neither is known. Absent: elapsed / expected.
   */
  progress?: number | null;
  /** The stage the model's log shows (`"loading tensors"`), or null. */
  stage?: string | null;
}

/**
 * `qm-status: loading 42% eta 7s (loading tensors)`: the percentage, the time left when a load
 * was measured before, the stage when the log shows one; only the seconds so far when neither
 * is known (`qm-status: loading 3s`). Clients read `loading N%`.
 */
export function loadingStatus(p: LoadProgress): string {
  const timed = p.expectedMs !== null && p.expectedMs > 0;
  const fraction =
    p.progress !== undefined ? p.progress : timed ? p.elapsedMs / p.expectedMs! : null;
  const stage = p.stage ? ` (${p.stage})` : "";
  if (fraction === null) return `qm-status: loading ${Math.round(p.elapsedMs / 1000)}s${stage}`;
  const pct = Math.min(99, Math.floor(fraction * 100));
  if (!timed) return `qm-status: loading ${pct}%${stage}`;
  const eta = Math.max(0, Math.ceil((p.expectedMs! - p.elapsedMs) / 1000));
  return `qm-status: loading ${pct}% eta ${eta}s${stage}`;
}

export interface PlaceholderOptions {
  model: string;
  /** Acquires the model and forwards the request; resolves with the upstream response. */
  start: (progress: WaitProgress) => Promise<Response>;
  /** Called when the client goes away before the upstream answered. */
  onCancel: () => void;
  /**
   * Milliseconds between progress comments while waiting (default 2000, so proxies and
   * clients with idle timeouts hold on).
   */
  remarkEveryMs?: number;
  /** The model's load in progress, for `qm-status: loading 42% eta 7s`; null: not known. */
  loadProgress?: () => LoadProgress | null;
  /** Timer injection for tests; returns a canceller. */
  every?: (ms: number, fn: () => void) => () => void;
  now?: () => number;
  /**
   * Renders a failure as the API's own stream error (default: an OpenAI `data: {"error":…}`
   * frame). The Anthropic routes pass their `event: error`, which their SDKs understand.
   */
  renderError?: (error: unknown) => Uint8Array;
}

const encoder = new TextEncoder();

const realEvery = (ms: number, fn: () => void) => every(fn, ms);

export function placeholderStream(opts: PlaceholderOptions): ReadableStream<Uint8Array> {
  const now = opts.now ?? (() => performance.now());
  const startedAt = now();
  let buffered: Uint8Array[] = [];
  let notify: (() => void) | null = null;
  let phase: "queued" | "loading" = "queued";
  let position = 0;
  let outcome: { ok: true; response: Response } | { ok: false; error: unknown } | null = null;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  let done = false;

  const push = (text: string) => {
    buffered.push(encoder.encode(text));
    notify?.();
  };
  const stopRemarks = (opts.every ?? realEvery)(opts.remarkEveryMs ?? 2000, () => {
    const secs = Math.round((now() - startedAt) / 1000);
    const load = phase === "loading" ? (opts.loadProgress?.() ?? null) : null;
    push(
      load
        ? sseComment(loadingStatus(load))
        : phase === "loading"
          ? sseComment(`qm: loading ${opts.model}, ${secs}s so far`)
          : sseComment(`qm: waiting for ${opts.model}, position ${position}, ${secs}s so far`),
    );
  });
  const finish = () => {
    if (done) return;
    done = true;
    stopRemarks();
  };

  opts
    .start({
      onPosition(p) {
        if (p <= 0 || p === position) return;
        position = p;
        push(sseComment(`qm-status: waiting ${p}`));
      },
      onLoading() {
        phase = "loading";
        push(sseComment("qm-status: loading"));
      },
    })
    .then(
      (response) => {
        outcome = { ok: true, response };
        // The client left while the upstream was being reached: end the relay so the model is
        // released.
        if (done) void response.body?.cancel().catch(() => {});
      },
      (error) => {
        outcome = { ok: false, error };
      },
    )
    .finally(() => notify?.());

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          if (buffered.length > 0) {
            for (const chunk of buffered) controller.enqueue(chunk);
            buffered = [];
            return;
          }
          if (reader) {
            const step = await reader.read().catch((error) => ({ error }));
            if ("error" in step) {
              controller.enqueue(
                opts.renderError?.(step.error) ??
                  sseError(upstreamFailure(opts.model, step.error, true)),
              );
              controller.close();
              finish();
            } else if (step.done) {
              controller.close();
              finish();
            } else {
              controller.enqueue(step.value);
            }
            return;
          }
          if (outcome) {
            stopRemarks();
            if (!outcome.ok) {
              const err = outcome.error;
              const code = err instanceof QmError ? err.code : "upstream_failed";
              controller.enqueue(
                opts.renderError?.(err) ?? sseError(errorMessage(err), "qm_error", code),
              );
              controller.close();
              finish();
              return;
            }
            const res = outcome.response;
            if (res.status >= 400 || !res.body) {
              // Headers said 200 long ago; the upstream's refusal becomes an error event.
              const text = res.body ? await res.text() : "";
              const message = upstreamErrorText(res.status, text);
              controller.enqueue(opts.renderError?.(new Error(message)) ?? sseError(message));
              controller.close();
              finish();
              return;
            }
            reader = res.body.getReader() as ReadableStreamDefaultReader<Uint8Array>;
            continue;
          }
          await new Promise<void>((resolve) => {
            notify = () => {
              notify = null;
              resolve();
            };
          });
        }
      },
      cancel(reason) {
        finish();
        opts.onCancel();
        if (reader) return reader.cancel(reason).catch(() => {});
        if (outcome?.ok) return outcome.response.body?.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function upstreamErrorText(status: number, text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: string } | string };
    const msg = typeof parsed.error === "string" ? parsed.error : parsed.error?.message;
    if (msg) return `upstream answered ${status}: ${msg}`;
  } catch {
    // not JSON: fall through to the raw text
  }
  return `upstream answered ${status}${text ? `: ${text.slice(0, 500)}` : ""}`;
}
