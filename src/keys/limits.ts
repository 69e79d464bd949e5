/**
 * A key's explicit limits (`[keys.NAME] rpm`, `tokens_per_min`) over a sliding minute. Only
 * these ever answer 429: the scheduler itself never refuses for load (it queues).
 *
 * - rpm: the times of the key's requests in the last minute; one more is admitted while fewer
 *   than `rpm` are in it, and is counted when admitted. The wait a refusal names is until the
 *   oldest leaves the minute.
 * - tokens: each answer's prompt plus completion tokens (as it stated them, read once per answer
 *   for the activity log and metrics) in one-second buckets; a request is admitted while the
 *   last minute's sum is under `tokens_per_min` (its own cost is not known before it runs). The
 *   wait is until enough buckets leave the minute to bring the sum under the limit.
 *
 * Pure: times are passed in (ms, any monotonic clock), nothing is armed.
 */

const MINUTE_MS = 60_000;
const BUCKET_MS = 1000;
const BUCKETS = MINUTE_MS / BUCKET_MS;

interface Window {
  /** Admitted requests' times, oldest first, from `head` on. */
  times: number[];
  head: number;
  /** Tokens per second: `second[i]` holds the tokens of second `stamp[i]` (absolute). */
  tokens: Float64Array;
  stamp: Float64Array;
}

/** Why a request is refused: the sentence and the seconds to wait (`Retry-After`). */
export interface Refusal {
  message: string;
  retryAfterS: number;
}

export class KeyLimits {
  private readonly windows = new Map<string, Window>();

  /**
   * Admits one request of the key `name` at `now` under its limits, counting it; or says why
   * not. `rpm` and `tokensPerMin` of 0 are no limit.
   */
  admit(name: string, limits: { rpm: number; tokensPerMin: number }, now: number): Refusal | null {
    if (limits.rpm <= 0 && limits.tokensPerMin <= 0) return null;
    const w = this.window(name);
    if (limits.tokensPerMin > 0) {
      const { used, freeAt } = tokensIn(w, now, limits.tokensPerMin);
      if (used >= limits.tokensPerMin) {
        return {
          message: `key "${name}" used ${used} tokens in the last minute; its limit is ${limits.tokensPerMin} (tokens_per_min)`,
          retryAfterS: seconds(freeAt - now),
        };
      }
    }
    if (limits.rpm > 0) {
      while (w.head < w.times.length && w.times[w.head]! <= now - MINUTE_MS) w.head++;
      if (w.head > 1024 && w.head * 2 > w.times.length) {
        w.times = w.times.slice(w.head);
        w.head = 0;
      }
      if (w.times.length - w.head >= limits.rpm) {
        return {
          message: `key "${name}" sent ${limits.rpm} requests in the last minute, its limit (rpm)`,
          retryAfterS: seconds(w.times[w.head]! + MINUTE_MS - now),
        };
      }
      w.times.push(now);
    }
    return null;
  }

  /** An answer of the key `name` stated `tokens` (prompt plus completion) at `now`. */
  spent(name: string, tokens: number, now: number): void {
    if (!(tokens > 0)) return;
    const w = this.window(name);
    const second = Math.floor(now / BUCKET_MS);
    const i = second % BUCKETS;
    if (w.stamp[i] !== second) {
      w.stamp[i] = second;
      w.tokens[i] = 0;
    }
    w.tokens[i]! += tokens;
  }

  /** The tokens `name` spent in the minute before `now`. */
  tokensInLastMinute(name: string, now: number): number {
    const w = this.windows.get(name);
    return w ? tokensIn(w, now, Number.POSITIVE_INFINITY).used : 0;
  }

  private window(name: string): Window {
    let w = this.windows.get(name);
    if (!w) {
      w = {
        times: [],
        head: 0,
        tokens: new Float64Array(BUCKETS),
        stamp: new Float64Array(BUCKETS).fill(-1),
      };
      this.windows.set(name, w);
    }
    return w;
  }
}

/**
 * The tokens of the minute before `now`, and when the sum will have dropped under `limit`
 * (buckets leave the minute oldest first).
 */
function tokensIn(w: Window, now: number, limit: number): { used: number; freeAt: number } {
  const current = Math.floor(now / BUCKET_MS);
  const live: [number, number][] = [];
  let used = 0;
  for (let i = 0; i < BUCKETS; i++) {
    const s = w.stamp[i]!;
    if (s > current - BUCKETS && s <= current && w.tokens[i]! > 0) {
      live.push([s, w.tokens[i]!]);
      used += w.tokens[i]!;
    }
  }
  let left = used;
  let freeAt = now;
  for (const [s, n] of live.sort((a, b) => a[0] - b[0])) {
    if (left < limit) break;
    left -= n;
    // Bucket `s` is second s; it has left the minute once the current second is s + 60.
    freeAt = (s + BUCKETS) * BUCKET_MS;
  }
  return { used, freeAt };
}

/** Whole seconds to wait, at least 1 (RFC 9110 §10.2.3: a non-negative integer). */
function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
