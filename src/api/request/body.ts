import { QmError } from "../../shared/errors.ts";
import { realSweep, type Sweep, type Swept } from "../../shared/sweep.ts";

const decoder = new TextDecoder();

/** A request body that must be a JSON object; anything else is a 400 saying what is wrong. */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(bytes));
  } catch {
    throw new QmError("bad_request", "request body is not valid JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new QmError("bad_request", "request body must be a JSON object");
  }
  return json as Record<string, unknown>;
}

export function tooLarge(limit: number): QmError {
  const mb = Math.round((limit / 1024 / 1024) * 10) / 10;
  return new QmError(
    "payload_too_large",
    `request body is larger than the ${mb} MB limit (server.max_body_mb)`,
  );
}

/**
 * A client that stops sending its body mid-way gets 408 after this long without a byte,
 * rather than holding its connection until the idle timeout closes it without an answer.
 */
export const BODY_STALL_MS = 10_000;

/** Declared bodies up to this size are read in one native read. */
const WHOLE_READ_BYTES = 1024 * 1024;

/**
 * Reads a request body, refusing more than `limit` bytes. A declared Content-Length over the
 * limit is refused before reading; a chunked body is counted as it arrives and cut at the
 * limit. A body that stops arriving for `stallMs` is a 408; one whose framing breaks is a 400.
 * The stall is watched by `sweep` (no timer of its own).
 */
export async function readBody(
  request: Request,
  limit: number,
  stallMs = BODY_STALL_MS,
  sweep: Sweep = realSweep,
): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  if (declared === null && !request.body) return new Uint8Array(0);
  const watch = new StallWatch(stallMs, sweep);
  const reader =
    declared !== null && Number(declared) <= WHOLE_READ_BYTES ? null : request.body?.getReader();
  try {
    // A small declared body (every chat request) is read natively in one go, far cheaper than
    // a reader loop; a large upload is read chunk by chunk, so that only silence, not a slow
    // link, runs into the limit.
    if (!reader) return await watch.watch(request.bytes());
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      const step = await watch.watch(reader.read());
      if (step.done) break;
      watch.progress();
      total += step.value.byteLength;
      if (total > limit) throw tooLarge(limit);
      chunks.push(step.value);
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  } catch (err) {
    void reader?.cancel().catch(() => {});
    if (err instanceof QmError) throw err;
    throw new QmError("bad_request", "the request body could not be read (broken framing)");
  } finally {
    watch.stop();
  }
}

/** Fails the read being watched once `stallMs` pass without `progress()`. */
class StallWatch implements Swept {
  private last: number;
  private fail: ((err: QmError) => void) | null = null;

  constructor(
    private readonly stallMs: number,
    private readonly sweeper: Sweep,
  ) {
    this.last = sweeper.now();
    sweeper.add(this);
  }

  /** `read`, unless the body stalls first. */
  watch<T>(read: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.fail = reject;
      read.then(resolve, reject);
    });
  }

  progress(): void {
    this.last = this.sweeper.now();
  }

  stop(): void {
    this.sweeper.delete(this);
    this.fail = null;
  }

  sweep(now: number): void {
    if (now - this.last < this.stallMs) return;
    const fail = this.fail;
    this.stop();
    fail?.(
      new QmError(
        "request_timeout",
        `the request body stopped arriving (nothing for ${this.stallMs / 1000} s)`,
      ),
    );
  }
}

/** A 400 naming what is wrong and, when there is one, the request field at fault. */
export function badRequest(message: string, param?: string): QmError {
  return new QmError("bad_request", message, param === undefined ? {} : { param });
}
