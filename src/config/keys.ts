/**
 * `[keys.NAME]`: named API keys. Each has exactly one of `key` (the key itself) and `key_sha256`
 * (its SHA-256 in hex, so the file holds no secret); only the hash is kept. Names are what
 * activity records, events, metrics labels and logs show, so they are short and plain; `admin`
 * (the keys of `server.api_keys`) and `anonymous` (requests when no key is configured) are
 * taken. No two keys, here or in `server.api_keys`, may be the same key.
 */
import { sha256Hex } from "../shared/digest.ts";
import type { Issues } from "./issues.ts";
import type { ConfigFile } from "./schema.ts";
import type { KeyConfig } from "./types.ts";

/** A key's name: a metrics label value and a word in a log line. */
export const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** What the keys of `server.api_keys` go by. */
export const ADMIN_KEY_NAME = "admin";
/** What requests go by when no key is configured. */
export const ANONYMOUS_KEY_NAME = "anonymous";
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

export function buildKeys(file: ConfigFile, issues: Issues): Record<string, KeyConfig> {
  const keys: Record<string, KeyConfig> = {};
  const owner = new Map<string, string>();
  if (!issues.within(["server", "api_keys"])) {
    for (const key of file.server.api_keys) owner.set(sha256Hex(key), "server.api_keys");
  }
  for (const [name, k] of Object.entries(file.keys)) {
    const at = ["keys", name];
    if (issues.within(at)) continue;
    if (!KEY_NAME.test(name)) {
      issues.at(
        at,
        "a key's name is 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit",
      );
      continue;
    }
    if (name === ADMIN_KEY_NAME || name === ANONYMOUS_KEY_NAME) {
      issues.at(
        at,
        `"${name}" is taken: ${name === ADMIN_KEY_NAME ? "the keys of server.api_keys go by it" : "requests go by it when no key is configured"}; choose another name`,
      );
      continue;
    }
    if ((k.key === "") === (k.key_sha256 === "")) {
      issues.at(
        at,
        k.key === ""
          ? "needs key or key_sha256 (qm keys new NAME prints a new key and its table)"
          : "has both key and key_sha256: keep one (key_sha256 keeps the secret out of the file)",
      );
      continue;
    }
    if (k.key_sha256 !== "" && !SHA256_HEX.test(k.key_sha256)) {
      issues.at([...at, "key_sha256"], "must be 64 hex digits (qm keys hash prints it for a key)");
      continue;
    }
    const sha256 = k.key === "" ? k.key_sha256.toLowerCase() : sha256Hex(k.key);
    const other = owner.get(sha256);
    if (other !== undefined) {
      issues.at(at, `is the same key as ${other}: each key must be different`);
      continue;
    }
    owner.set(sha256, `keys.${name}`);
    keys[name] = {
      name,
      sha256,
      models: [...k.models],
      admin: k.admin,
      priority: k.priority,
      maxConcurrency: k.max_concurrency,
      maxQueued: k.max_queued,
      rpm: k.rpm,
      tokensPerMin: k.tokens_per_min,
    };
  }
  return keys;
}
