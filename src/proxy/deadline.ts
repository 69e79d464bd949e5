/**
 * The time limits of one upstream call, per model: the response headers must come within
 * `first_byte_timeout_s` of sending the request, and once they are in, no read of the body may
 * wait longer than `stall_timeout_s`. An upstream that hangs would otherwise hold its request,
 * its lease and with them its whole swap group forever. When a limit passes, `signal` aborts
 * with a QmError("upstream_timeout"): the pending fetch or body read fails with it, so the
 * exchange ends the way any failure does and the lease is released.
 *
 * Only time spent waiting on the upstream counts. While qm writes to a slow client no read is
 * pending, and that time never counts (a slow reader must not get a model restarted); nor does
 * anything qm sends by itself (pings, wait-status comments): only the upstream's reads move the
 * clock.
 *
 * `signal` is the whole call's: it also aborts when the client leaves, and when qm's shutdown
 * cuts the call (`interrupt`). None of that costs a timer or a listener per call: the deadline
 * is live in a `Sweep` from creation to `end`, and the sweep looks at the clock and the
 * client's signal every period. A read costs one clock read.
 */
import type { ModelConfig } from "../config/types.ts";
import { QmError } from "../shared/errors.ts";
import { realSweep, type Sweep, type Swept } from "../shared/sweep.ts";

export type { Timers } from "../shared/timer.ts";

/** What the limits are reported to (the runtime counts stalls to restart a stuck model). */
export interface DeadlineReport {
  /** A limit passed. */
  stalled(): void;
  /** The exchange ended normally: a stall streak is over. */
  answered(): void;
}

export interface DeadlineOptions {
  model: string;
  /** 0 = no limit. */
  firstByteMs: number;
  /** 0 = no limit. */
  stallMs: number;
  report?: DeadlineReport | undefined;
  /** Where the deadline is live; the process's real-time sweep by default. */
  sweep?: Sweep<Deadline> | undefined;
  /** The client's signal: when it aborts, so does the call (with its reason). */
  client?: AbortSignal | undefined;
}

/** The part of a deadline that a body reader drives. */
export interface ReadWatch {
  /** A read of the upstream's body starts (the clock runs)... */
  reading(): void;
  /** ...and returned (the clock stops). */
  read(): void;
}

const seconds = (ms: number) => `${Math.round(ms) / 1000} s`;

export class Deadline implements ReadWatch, Swept {
  private readonly aborter = new AbortController();
  /** Aborts when a limit passes (reason: the timeout QmError), the client leaves, or a cut. */
  readonly signal: AbortSignal = this.aborter.signal;
  private readonly sweeper: Sweep<Deadline>;
  private phase: "idle" | "headers" | "body" | "over" = "idle";
  /** When the request went out. */
  private sentAt = 0;
  /** When the pending read started; -1 while none is pending. */
  private since = -1;
  private expired: QmError | null = null;
  private client: AbortSignal | null;
  /** When the first read of the answer's body returned (the sweep's clock); -1 before. */
  firstReadAt = -1;

  /** The deadline of a call to `model`. `mayIdle`: only the first-byte limit applies. */
  static forModel(
    model: ModelConfig,
    opts: {
      report?: DeadlineReport | undefined;
      sweep?: Sweep<Deadline> | undefined;
      client?: AbortSignal | undefined;
      mayIdle?: boolean | undefined;
    } = {},
  ): Deadline {
    // Built without spreads: this runs for every proxied request.
    return new Deadline({
      model: model.id,
      firstByteMs: model.firstByteTimeoutMs,
      stallMs: opts.mayIdle ? 0 : model.stallTimeoutMs,
      report: opts.report,
      sweep: opts.sweep,
      client: opts.client,
    });
  }

  constructor(private readonly opts: DeadlineOptions) {
    this.sweeper = opts.sweep ?? (realSweep as Sweep<Deadline>);
    this.client = opts.client ?? null;
    if (this.client?.aborted) this.aborter.abort(this.client.reason);
    else this.sweeper.add(this);
  }

  /** The timeout, once one happened. */
  get timedOut(): QmError | null {
    return this.expired;
  }

  /** The request is being sent: the first-byte clock runs. */
  start(): void {
    if (this.phase !== "idle") return;
    this.phase = "headers";
    this.sentAt = this.sweeper.now();
  }

  /** The response headers are in: from now on only body reads are timed. */
  headers(): void {
    if (this.phase === "headers") this.phase = "body";
  }

  reading(): void {
    this.since = this.sweeper.now();
  }

  read(): void {
    this.since = -1;
    if (this.firstReadAt < 0) this.firstReadAt = this.sweeper.now();
  }

  /** The sweep's clock (the call's time base). */
  now(): number {
    return this.sweeper.now();
  }

  /** The exchange is over (`answered`: it ended normally); the limits no longer apply. */
  end(answered: boolean): void {
    this.sweeper.delete(this);
    this.client = null;
    if (this.phase === "over") return;
    this.phase = "over";
    if (answered) this.opts.report?.answered();
  }

  /** Ends the call now with `reason` (qm's shutdown; not a stall: nothing is reported). */
  interrupt(reason: unknown): void {
    if (this.phase === "over") return;
    this.abortWith(
      reason instanceof QmError
        ? reason
        : new QmError("shutting_down", `the call to model "${this.opts.model}" was cut`),
    );
  }

  /** The client went away (or stopped reading): the call ends, with no timeout and no stall. */
  cancel(): void {
    this.client = null;
    this.sweeper.delete(this);
    if (!this.signal.aborted) this.aborter.abort();
  }

  /** Called by the sweep every period while the call is live. */
  sweep(now: number): void {
    const client = this.client;
    if (client?.aborted) {
      this.cancel();
      return;
    }
    if (this.phase === "headers") {
      const limit = this.opts.firstByteMs;
      if (limit > 0 && now - this.sentAt >= limit) {
        this.expire(
          `model "${this.opts.model}" sent no response within ${seconds(limit)} (first_byte_timeout_s)`,
        );
      }
      return;
    }
    if (this.phase !== "body") return;
    const stall = this.opts.stallMs;
    // No read pending: qm is busy writing to the client, which is not the upstream's delay.
    if (stall > 0 && this.since >= 0 && now - this.since >= stall) {
      this.expire(
        `model "${this.opts.model}" sent nothing for ${seconds(stall)} mid-answer (stall_timeout_s)`,
      );
    }
  }

  /** The one way a call is ended from here: limits off, the signal aborted with `err`. */
  private abortWith(err: QmError): void {
    this.sweeper.delete(this);
    this.phase = "over";
    this.expired = err;
    this.aborter.abort(err);
  }

  private expire(message: string): void {
    this.opts.report?.stalled();
    this.abortWith(new QmError("upstream_timeout", message));
  }
}
