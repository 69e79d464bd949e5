import type { Lease, LeaseInfo, LeaseKey } from "../api/gateway.ts";
import { QmError } from "../shared/errors.ts";
import type { Logger } from "../shared/log.ts";
import { realTimers, setLongTimeout, type Timers } from "../shared/timer.ts";

interface Held {
  lease: Lease;
  /** The name of the key that took it (`anonymous` when none is configured). */
  owner: string;
  ttlMs: number;
  expiresAt: number;
  cancel: () => void;
}

/**
 * Leases: a model held busy for work that outlives its HTTP request (async image or video jobs).
 * A lease is an ordinary granted request that is released later, so every scheduling rule that
 * respects in-flight work respects it too. It is released exactly once: by its holder, or when
 * its TTL passes without a renewal (the holder went away). TTLs run on the injected `timers`.
 */
export class LeaseBook {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly log: Logger,
    private readonly timers: Timers = realTimers,
  ) {}

  add(lease: Lease, ttlMs: number, owner = "anonymous"): LeaseInfo {
    const id = crypto.randomUUID();
    const entry: Held = { lease, owner, ttlMs, expiresAt: 0, cancel: () => {} };
    this.held.set(id, entry);
    this.arm(id, entry);
    return this.info(id, entry);
  }

  /** Renews a lease; `by`, when given, must be an admin or the key that took it. */
  renew(model: string, id: string, ttlMs?: number, by?: LeaseKey): LeaseInfo {
    const entry = this.find(model, id, by);
    if (ttlMs !== undefined) entry.ttlMs = ttlMs;
    this.arm(id, entry);
    return this.info(id, entry);
  }

  /** Releases a lease; `by`, when given, must be an admin or the key that took it. */
  release(model: string, id: string, by?: LeaseKey): void {
    const entry = this.find(model, id, by);
    entry.cancel();
    this.held.delete(id);
    entry.lease.release();
  }

  /** The leases on `model`, or on every model when null. */
  list(model: string | null): LeaseInfo[] {
    const out: LeaseInfo[] = [];
    for (const [id, e] of this.held) {
      if (model === null || e.lease.model.id === model) out.push(this.info(id, e));
    }
    return out;
  }

  /**
   * Before an unload of `model` (null: all). A leased model is busy by design: unloading it
   * would only wait out the lease while every new request queued behind the pending unload.
   * So: a `conflict` (409) naming the leases, unless forced, which revokes them (logged).
   */
  clearForUnload(model: string | null, force: boolean): void {
    const held = this.list(model);
    if (held.length > 0 && !force) {
      const names = held.map((l) => `${l.lease} on "${l.model}"`).join(", ");
      throw new QmError(
        "conflict",
        `cannot unload: leased (${names}); release the lease or add ?force=true to revoke it`,
      );
    }
    for (const l of held) {
      this.release(l.model, l.lease);
      this.log.warn(`lease ${l.lease} on "${l.model}" revoked by a forced unload`);
    }
  }

  /** Releases every lease (shutdown). */
  releaseAll(): void {
    for (const [id, entry] of this.held) {
      entry.cancel();
      this.held.delete(id);
      entry.lease.release();
    }
  }

  count(model: string): number {
    let n = 0;
    for (const e of this.held.values()) if (e.lease.model.id === model) n++;
    return n;
  }

  private find(model: string, id: string, by?: LeaseKey): Held {
    const entry = this.held.get(id);
    if (!entry || entry.lease.model.id !== model) {
      throw new QmError("not_found", `no lease "${id}" on model "${model}" (released or expired)`);
    }
    if (by && !by.admin && by.name !== entry.owner) {
      throw new QmError(
        "forbidden",
        `lease "${id}" is another key's: key "${by.name}" may not change it`,
      );
    }
    return entry;
  }

  private arm(id: string, entry: Held): void {
    entry.cancel();
    entry.expiresAt = this.timers.now() + entry.ttlMs;
    entry.cancel = setLongTimeout(
      () => {
        if (!this.held.delete(id)) return;
        this.log.warn(
          `lease ${id} on "${entry.lease.model.id}" expired after ${entry.ttlMs / 1000} s without renewal; released`,
        );
        entry.lease.release();
      },
      entry.ttlMs,
      this.timers,
    );
  }

  private info(id: string, entry: Held): LeaseInfo {
    return {
      lease: id,
      model: entry.lease.model.id,
      expires_in_s: Math.round((entry.expiresAt - this.timers.now()) / 1000),
    };
  }
}
