/**
 * The keys of one config: `server.api_keys` (admins named `admin`) and `[keys.NAME]`, looked up
 * by what a client presents. Design and invariants: src/api/edge/design.md ("Keys").
 *
 * Look-up without a timing oracle: the presented key is hashed (SHA-256) whole before anything
 * is compared, and the digest is looked up in a map of the configured keys' digests. How long
 * that takes depends on the digest, which a client cannot steer towards a configured key's
 * without knowing it; no comparison ever runs over the secret itself, so there is no prefix a
 * client can learn byte by byte. The one comparison of the found entry (`timingSafeEqual`) is
 * of digests too.
 *
 * One table per `Config` object (the runtime's is changed in place by a reload): it rebuilds
 * itself when it sees `server.api_keys` or `keys` replaced, and marks every key that is no
 * longer configured — removed, or its secret changed — `revoked`.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { ADMIN_KEY_NAME, ANONYMOUS_KEY_NAME } from "../config/keys.ts";
import type { Config, KeyConfig } from "../config/types.ts";
import { ApiKey, nobody, unrestricted } from "./api-key.ts";
import { KeyLimits } from "./limits.ts";

interface Entry {
  key: ApiKey;
  digest: Buffer;
}

const tables = new WeakMap<Config, KeyTable>();

export class KeyTable {
  /** Requests when no key is configured: every model, every right. */
  readonly anonymous = unrestricted(ANONYMOUS_KEY_NAME);
  /** What a path open without a key (`/health`, the dashboard's files) is asked as. */
  readonly nobody = nobody(ANONYMOUS_KEY_NAME);
  /** Per key name, kept across reloads: a reload does not reset a key's minute. */
  readonly limits = new KeyLimits();
  private byDigest = new Map<string, Entry>();
  private adminKeys: readonly string[] | null = null;
  private named: Readonly<Record<string, KeyConfig>> | null = null;

  private constructor(private readonly config: Config) {
    this.sync();
  }

  /** The table of `config`, made on first use. */
  static of(config: Config): KeyTable {
    let t = tables.get(config);
    if (!t) {
      t = new KeyTable(config);
      tables.set(config, t);
    }
    return t;
  }

  /** Whether any key is configured: then every path but the open ones needs one. */
  get required(): boolean {
    this.sync();
    return this.byDigest.size > 0;
  }

  /** The key `presented` is, or null when it is none of the configured ones. */
  lookup(presented: string): ApiKey | null {
    this.sync();
    const digest = createHash("sha256").update(presented, "utf8").digest();
    const entry = this.byDigest.get(digest.toString("hex"));
    return entry && timingSafeEqual(entry.digest, digest) ? entry.key : null;
  }

  /** The configured key named `name` (`admin` names the keys of `server.api_keys`). */
  byName(name: string): ApiKey | null {
    this.sync();
    for (const e of this.byDigest.values()) if (e.key.name === name) return e.key;
    return null;
  }

  /** Every configured key's name, `admin` first when there are admin keys (metrics, usage). */
  names(): string[] {
    this.sync();
    return [...new Set([...this.byDigest.values()].map((e) => e.key.name))];
  }

  /**
   * Rebuilds the table if the config's keys were replaced (a reload). A key no longer
   * configured — removed, or configured with another secret or name — is marked `revoked`;
   * returns how many were.
   */
  sync(): number {
    const { server, keys } = this.config;
    if (this.adminKeys === server.apiKeys && this.named === keys) return 0;
    this.adminKeys = server.apiKeys;
    this.named = keys;
    const next = new Map<string, Entry>();
    const add = (hex: string, key: ApiKey) =>
      next.set(hex, { key, digest: Buffer.from(hex, "hex") });
    for (const k of server.apiKeys) {
      add(createHash("sha256").update(k, "utf8").digest("hex"), unrestricted(ADMIN_KEY_NAME));
    }
    for (const k of Object.values(keys)) add(k.sha256, new ApiKey(k));
    let revoked = 0;
    for (const [hex, old] of this.byDigest) {
      if (next.get(hex)?.key.name === old.key.name) continue;
      old.key.revoked = true;
      revoked++;
    }
    this.byDigest = next;
    return revoked;
  }
}
