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
 * clock. One timer per call, re-armed only when it fires: a read costs two clock reads.
 */
import type { ModelConfig } from "../config/types.ts";
import { QmError } from "../shared/errors.ts";
import { realTimers, type Timers } from "../shared/timer.ts";

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
  report?: DeadlineReport;
  timers?: Timers;
  /**
   * Ends the call from outside with the signal's reason (qm's shutdown grace is over): the
   * client gets that error the way it would get a timeout's, and no stall is counted.
   */
  cut?: AbortSignal;
}

/** The part of a deadline that a body reader drives. */
export interface ReadWatch {
  /** A read of the upstream's body starts (the clock runs)... */
  reading(): void;
  /** ...and returned (the clock stops). */
  read(): void;
}

const seconds = (ms: number) => `${Math.round(ms) / 1000} s`;

export class Deadline implements ReadWatch {
  private readonly aborter = new AbortController();
  private readonly timers: Timers;
  private handle: unknown = null;
  private phase: "idle" | "headers" | "body" | "over" = "idle";
  /** When the pending read started; -1 while none is pending. */
  private since = -1;
  private expired: QmError | null = null;

  /** A deadline for a call to `model`, or null when it has no limits at all. */
  static forModel(
    model: ModelConfig,
    report?: DeadlineReport,
    timers?: Timers,
    cut?: AbortSignal,
  ): Deadline | null {
    if (model.firstByteTimeoutMs <= 0 && model.stallTimeoutMs <= 0 && !cut) return null;
    // Built without spreads: this runs for every proxied request.
    return new Deadline({
      model: model.id,
      firstByteMs: model.firstByteTimeoutMs,
      stallMs: model.stallTimeoutMs,
      report,
      timers,
      cut,
    });
  }

  private readonly onCut = () => this.interrupt(this.opts.cut?.reason);

  constructor(private readonly opts: DeadlineOptions) {
    this.timers = opts.timers ?? realTimers;
    if (opts.cut?.aborted) this.interrupt(opts.cut.reason);
    else opts.cut?.addEventListener("abort", this.onCut, { once: true });
  }

  /** Aborts (with the timeout QmError as its reason) when a limit passes. */
  get signal(): AbortSignal {
    return this.aborter.signal;
  }

  /**
   * The signal for the upstream call: this deadline's, also aborted when `client` aborts (with
   * its reason). Cheaper than `AbortSignal.any`, which builds a composite on every call.
   */
  follow(client: AbortSignal): AbortSignal {
    if (client.aborted) this.aborter.abort(client.reason);
    else {
      this.client = client;
      client.addEventListener("abort", this.onClient, { once: true });
    }
    return this.aborter.signal;
  }

  private client: AbortSignal | null = null;
  private readonly onClient = () => {
    if (!this.aborter.signal.aborted) this.aborter.abort(this.client?.reason);
  };

  private unfollow(): void {
    this.client?.removeEventListener("abort", this.onClient);
    this.client = null;
  }

  /** The timeout, once one happened. */
  get timedOut(): QmError | null {
    return this.expired;
  }

  /** The request is being sent: the first-byte clock runs. */
  start(): void {
    if (this.phase !== "idle") return;
    this.phase = "headers";
    if (this.opts.firstByteMs > 0) this.arm(this.opts.firstByteMs);
  }

  /** The response headers are in: from now on only body reads are timed. */
  headers(): void {
    if (this.phase !== "headers") return;
    this.phase = "body";
    this.disarm();
    if (this.opts.stallMs > 0) this.arm(this.opts.stallMs);
  }

  reading(): void {
    this.since = this.timers.now();
  }

  read(): void {
    this.since = -1;
  }

  /** The exchange is over (`answered`: it ended normally); the limits no longer apply. */
  end(answered: boolean): void {
    this.opts.cut?.removeEventListener("abort", this.onCut);
    this.unfollow();
    if (this.phase === "over") return;
    this.phase = "over";
    this.disarm();
    if (answered) this.opts.report?.answered();
  }

  /** Ends the call now with `reason` (not a stall: nothing is reported). */
  interrupt(reason: unknown): void {
    if (this.phase === "over") return;
    this.abortWith(
      reason instanceof QmError
        ? reason
        : new QmError("shutting_down", `the call to model "${this.opts.model}" was cut`),
    );
  }

  /** The one way a call is ended from here: limits off, the signal aborted with `err`. */
  private abortWith(err: QmError): void {
    this.opts.cut?.removeEventListener("abort", this.onCut);
    this.phase = "over";
    this.disarm();
    this.expired = err;
    this.aborter.abort(err);
  }

  private readonly onFire = () => this.fire();

  private arm(ms: number): void {
    this.handle = this.timers.set(this.onFire, ms);
  }

  private disarm(): void {
    if (this.handle !== null) this.timers.clear(this.handle);
    this.handle = null;
  }

  private fire(): void {
    this.handle = null;
    if (this.phase === "headers") {
      this.expire(
        `model "${this.opts.model}" sent no response within ${seconds(this.opts.firstByteMs)} (first_byte_timeout_s)`,
      );
      return;
    }
    if (this.phase !== "body") return;
    const stall = this.opts.stallMs;
    // No read pending: qm is busy writing to the client, which is not the upstream's delay.
    const quiet = this.since < 0 ? 0 : this.timers.now() - this.since;
    if (quiet < stall) {
      this.arm(stall - quiet);
      return;
    }
    this.expire(
      `model "${this.opts.model}" sent nothing for ${seconds(stall)} mid-answer (stall_timeout_s)`,
    );
  }

  private expire(message: string): void {
    this.opts.report?.stalled();
    this.abortWith(new QmError("upstream_timeout", message));
  }
}
