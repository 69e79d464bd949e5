/**
 * One API key as the edge found it: its name (what records, events, metrics and logs show),
 * whether it is an admin, the models it may use, its scheduling asks and its limits. Made from
 * the config by `KeyTable`; a request carries the one it was authorized with to its end, so a
 * reload that changes or removes the key changes nothing for requests already past the edge —
 * except `revoked`, which the table sets on a key a reload removed.
 */
import { matchesPattern } from "../config/aliases.ts";
import type { KeyConfig, KeyPriority, ModelConfig } from "../config/types.ts";

export class ApiKey {
  readonly name: string;
  readonly admin: boolean;
  readonly priority: KeyPriority;
  readonly maxConcurrency: number;
  readonly maxQueued: number;
  readonly rpm: number;
  readonly tokensPerMin: number;
  /** Every model, whatever its name (`models = ["*"]`, an admin of `server.api_keys`, anonymous). */
  readonly allModels: boolean;
  /** A reload removed this key (or changed its secret): its waiting requests are refused. */
  revoked = false;
  private readonly exact: ReadonlySet<string>;
  private readonly patterns: readonly string[];

  constructor(k: Omit<KeyConfig, "sha256">) {
    this.name = k.name;
    this.admin = k.admin;
    this.priority = k.priority;
    this.maxConcurrency = k.maxConcurrency;
    this.maxQueued = k.maxQueued;
    this.rpm = k.rpm;
    this.tokensPerMin = k.tokensPerMin;
    this.allModels = k.models.includes("*");
    this.exact = new Set(k.models.filter((p) => !p.includes("*")));
    this.patterns = k.models.filter((p) => p.includes("*"));
  }

  /**
   * It may use `model`: one of its patterns matches the model's id or one of its aliases. A
   * `?ctx=N` variant is its base's (`base`: that model's config, for its aliases).
   */
  allows(model: Pick<ModelConfig, "id" | "aliases" | "variantOf">, base?: ModelConfig): boolean {
    if (this.allModels) return true;
    const names = model.variantOf
      ? [model.variantOf.base, ...(base?.aliases ?? [])]
      : [model.id, ...model.aliases];
    return names.some((n) => this.exact.has(n) || this.patterns.some((p) => matchesPattern(p, n)));
  }
}

/** Every model, every right: what requests are when no key is configured. */
export function unrestricted(name: string): ApiKey {
  return new ApiKey({
    name,
    models: ["*"],
    admin: true,
    priority: "normal",
    maxConcurrency: 0,
    maxQueued: 0,
    rpm: 0,
    tokensPerMin: 0,
  });
}

/** No model and no right: what an open path (`/health`, the dashboard's files) is asked as. */
export function nobody(name: string): ApiKey {
  return new ApiKey({
    name,
    models: [],
    admin: false,
    priority: "normal",
    maxConcurrency: 0,
    maxQueued: 0,
    rpm: 0,
    tokensPerMin: 0,
  });
}
