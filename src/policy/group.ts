import type { Config, GroupConfig } from "../config/types.ts";
import type { Eviction, EvictionPolicy } from "./types.ts";

/**
 * The static group policy:
 * - a running member of the target's own group is stopped when that group has `swap = true`;
 * - a running member of another group is stopped only when the *target's* group is
 *   `exclusive`, and never when the other group is `persistent`.
 *
 * Deliberately kept legacy quirk: loading a member of a non-exclusive group does not evict
 * anything outside its group, even members of exclusive groups. Exclusivity is a property of
 * the group being loaded, not of the groups already resident.
 */
export class GroupPolicy implements EvictionPolicy {
  private readonly groupOf: Map<string, GroupConfig>;

  constructor(config: Pick<Config, "models" | "groups">) {
    this.groupOf = new Map();
    for (const model of Object.values(config.models)) {
      const group = config.groups[model.group];
      if (group) this.groupOf.set(model.id, group);
    }
  }

  evictionFor(target: string, running: readonly string[]): Eviction {
    const own = this.groupOf.get(target);
    if (!own) return { ok: false, reason: `model "${target}" belongs to no group` };
    const evict: string[] = [];
    for (const id of running) {
      if (id === target) continue;
      const other = this.groupOf.get(id);
      if (!other) {
        // A resident we know nothing about (removed from config): it cannot be accounted for.
        evict.push(id);
      } else if (other === own) {
        if (own.swap) evict.push(id);
      } else if (own.exclusive && !other.persistent) {
        evict.push(id);
      }
    }
    return { ok: true, evict };
  }
}
