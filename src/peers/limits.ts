/**
 * What qm takes from a peer, at most. A peer is another box, and a misbehaving one — broken,
 * or hostile — must not be able to grow qm's memory or starve its local work: every answer is
 * read up to a bound, every event of a followed stream is bounded, the model list it announces
 * is capped, and its state is applied at most every `APPLY_EVERY_MS`. A peer past a bound is
 * marked down (its breaker opens), with `last_error` naming the bound.
 */

/** The largest answer read from a peer (`/api/status`, `/health`, a llama-swap's lists). */
export const MAX_PEER_ANSWER = 4 * 2 ** 20;
/** The longest line, and the largest event, read from a peer's `/api/events`. */
export const MAX_PEER_EVENT = 4 * 2 ** 20;
/** The models (and, apart, the aliases) taken from one peer: the first this many valid ones. */
export const MAX_PEER_MODELS = 1000;
/** A peer's state changes are applied at most this often; the latest wins in between. */
export const APPLY_EVERY_MS = 100;
/**
 * How fast a peer's event stream is read, past a first burst (`ReadBudget`): a qm peer
 * sends a status when a client connects and a few hundred bytes per change, while one that
 * floods would otherwise have qm parse events as fast as the socket delivers them. Unread
 * bytes stay in the socket, so TCP slows the peer down, not qm.
 */
export const PEER_EVENT_BYTES_PER_S = 1024 * 1024;

const MIB = 2 ** 20;
const size = (bytes: number) => (bytes % MIB === 0 ? `${bytes / MIB} MiB` : `${bytes} bytes`);

/** A peer's answer or stream went past one of the bounds above. */
export class PeerBoundError extends Error {}

/** The error for an answer to `path` over `MAX_PEER_ANSWER`. */
export function answerTooLarge(path: string): PeerBoundError {
  return new PeerBoundError(
    `its ${path} answer is over ${size(MAX_PEER_ANSWER)} (the bound on a peer's answer)`,
  );
}

/**
 * Watches the bytes of a server-sent event stream (WHATWG HTML §9.2.5: a line ends at CR, LF
 * or CRLF; an empty line ends an event) before they reach the parser, which would otherwise
 * hold an endless line or event in memory: `feed` says what bound a chunk crossed, or null.
 */
export class EventBound {
  private line = 0;
  private event = 0;
  private afterCr = false;

  constructor(private readonly max = MAX_PEER_EVENT) {}

  feed(chunk: Uint8Array): string | null {
    const n = chunk.length;
    // Where the next LF and CR are, each found once per pass over the chunk (-1: none left).
    let lf = chunk.indexOf(0x0a);
    let cr = chunk.indexOf(0x0d);
    let i = 0;
    while (i < n) {
      if (this.afterCr) {
        this.afterCr = false;
        // The LF of a CRLF: the line already ended at its CR.
        if (chunk[i] === 0x0a) {
          i++;
          continue;
        }
      }
      if (lf !== -1 && lf < i) lf = chunk.indexOf(0x0a, i);
      if (cr !== -1 && cr < i) cr = chunk.indexOf(0x0d, i);
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      const run = (end === -1 ? n : end) - i;
      this.line += run;
      this.event += run;
      if (this.line > this.max) {
        return `its /api/events sent a line over ${size(this.max)} (the bound on a peer's event)`;
      }
      if (this.event > this.max) {
        return `its /api/events sent an event over ${size(this.max)} (the bound on a peer's event)`;
      }
      if (end === -1) break;
      if (this.line === 0) this.event = 0; // an empty line ends the event
      this.line = 0;
      this.afterCr = chunk[end] === 0x0d;
      i = end + 1;
    }
    return null;
  }
}

/**
 * A token bucket over the bytes read from one peer's stream: twice `MAX_PEER_EVENT` at once
 * (a full status event is never held back, nor one past the bound, which fails anyway), then
 * `PEER_EVENT_BYTES_PER_S`. `take` says how long to wait (ms, on the caller's clock) before
 * reading on; 0 while within budget. Pure.
 */
export class ReadBudget {
  private tokens: number;
  private at: number;

  constructor(
    now: number,
    private readonly burst = 2 * MAX_PEER_EVENT,
    private readonly perSecond = PEER_EVENT_BYTES_PER_S,
  ) {
    this.tokens = burst;
    this.at = now;
  }

  take(bytes: number, now: number): number {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) * this.perSecond) / 1000);
    this.at = now;
    this.tokens -= bytes;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.perSecond);
  }
}
