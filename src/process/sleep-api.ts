/**
 * A model server's sleep API (vLLM `--enable-sleep-mode`, served with `VLLM_SERVER_DEV_MODE=1`):
 * `POST /sleep?level=N` lets go of GPU memory (level 1 keeps the weights in host RAM, level 2
 * discards them), `POST /wake_up` takes it back, `GET /is_sleeping` → `{"is_sleeping": bool}`.
 * Each call (its answer read included) is bounded by `timeoutMs` on the injected timers; every
 * answer is checked against `/is_sleeping`, so a server that answers 200 without doing it is not
 * believed. Errors are QmErrors naming the model.
 */
import { QmError } from "../shared/errors.ts";
import type { Fetch } from "../shared/fetch.ts";
import { readAtMost } from "../shared/read-at-most.ts";
import { realTimers, setTimeoutSignal, type Timers } from "../shared/timer.ts";

/** An answer's text, at most 4 KiB of it ("" past that or on a read error). */
async function textOf(res: Response): Promise<string> {
  const bytes = await readAtMost(res, 4096).catch(() => null);
  return bytes ? new TextDecoder().decode(bytes) : "";
}

export interface SleepCall {
  model: string;
  /** The server's base URL (`proxy`). */
  base: string;
  timeoutMs: number;
  /** Default: the global fetch. */
  fetch?: Fetch;
  /** Default: real timers. */
  timers?: Timers;
}

/** Puts the server to sleep; resolves once `/is_sleeping` says it is. */
export async function sleepServer(call: SleepCall, level: 1 | 2): Promise<void> {
  await post(call, `/sleep?level=${level}`, "sleep");
  if (!(await isSleeping(call))) {
    throw failed(call, "sleep", "it answered /sleep but /is_sleeping still says false");
  }
}

/** Wakes the server; resolves once `/is_sleeping` says it is awake. */
export async function wakeServer(call: SleepCall): Promise<void> {
  await post(call, "/wake_up", "wake");
  if (await isSleeping(call)) {
    throw failed(call, "wake", "it answered /wake_up but /is_sleeping still says true");
  }
}

/** `GET /is_sleeping`. */
export async function isSleeping(call: SleepCall): Promise<boolean> {
  const { res, text } = await send(call, "GET", "/is_sleeping", "sleep");
  if (!res.ok) throw failed(call, "sleep", `GET /is_sleeping answered ${res.status}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw failed(call, "sleep", "GET /is_sleeping did not answer JSON");
  }
  const v = (body as { is_sleeping?: unknown } | null)?.is_sleeping;
  if (typeof v !== "boolean") throw failed(call, "sleep", "GET /is_sleeping has no is_sleeping");
  return v;
}

async function post(call: SleepCall, path: string, what: "sleep" | "wake"): Promise<void> {
  const { res, text } = await send(call, "POST", path, what);
  if (!res.ok) {
    const said = text.trim().slice(0, 200);
    throw failed(call, what, `POST ${path} answered ${res.status}${said ? `: ${said}` : ""}`);
  }
}

/** One call and its answer's text, within `timeoutMs`. */
async function send(
  call: SleepCall,
  method: string,
  path: string,
  what: "sleep" | "wake",
): Promise<{ res: Response; text: string }> {
  const f = call.fetch ?? fetch;
  const limit = setTimeoutSignal(call.timers ?? realTimers, call.timeoutMs);
  try {
    const res = await f(call.base + path, { method, signal: limit.signal });
    return { res, text: await textOf(res) };
  } catch (err) {
    const why = limit.signal.aborted
      ? `no answer within ${call.timeoutMs} ms`
      : err instanceof Error
        ? err.message
        : String(err);
    throw failed(call, what, `${method} ${path}: ${why}`);
  } finally {
    limit.cancel();
  }
}

function failed(call: SleepCall, what: "sleep" | "wake", why: string): QmError {
  const verb = what === "sleep" ? "put to sleep" : "woken";
  return new QmError(
    "upstream_start_failed",
    `model "${call.model}" could not be ${verb} (${why}); is it a vLLM server with --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1?`,
  );
}
