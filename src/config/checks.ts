/**
 * Cross-reference checks: listen addresses, group membership and the matrix (aliases: `aliases.ts`).
 * They run on schema-valid parts only (see `Issues.within`), so one typo does not cascade
 * into a list of follow-on complaints.
 */
import { fileOrder } from "./build-models.ts";
import type { Issues } from "./issues.ts";
import type { SourceMap } from "./locate.ts";
import { type BoundAddress, checkListenerOverlaps } from "./port-clashes.ts";
import type { ConfigFile } from "./schema.ts";
import { didYouMean } from "./suggest.ts";
import { DEFAULT_GROUP, type GroupConfig, type MatrixConfig } from "./types.ts";

const HOST_PORT = /^(\[[0-9A-Za-z:.%]+\]|[^\s:[\]/]+):(\d{1,5})$/;
const HOST_PORT_HINT = 'expected "host:port" (IPv6 as "[::1]:8080")';

/** Splits `host:port` / `[v6]:port`; the host comes back without brackets. Port 0 is
 *  allowed: tests (and anyone who wants it) let the OS pick. */
export function parseHostPort(address: string): { host: string; port: number } | null {
  const match = HOST_PORT.exec(address);
  if (!match) return null;
  const port = Number(match[2]);
  if (port > 65535) return null;
  return { host: match[1]!.replace(/^\[(.*)\]$/, "$1"), port };
}

/**
 * Checks listen addresses, and that no two take one port; returns them (their ports are kept
 * away from `${PORT}`).
 */
export function checkServer(file: ConfigFile, issues: Issues): BoundAddress[] {
  const { listen, metrics_listen } = file.server;
  const bound: BoundAddress[] = [];
  if (!issues.within(["server", "listen"])) {
    if (listen.length === 0) {
      issues.at(["server", "listen"], "at least one listen address is required");
    }
    listen.forEach((address, i) => {
      const parsed = parseHostPort(address);
      const at = ["server", "listen", i];
      if (!parsed) issues.at(at, `${HOST_PORT_HINT}, got ${JSON.stringify(address)}`);
      // Port 0 asks the OS for a fresh port each time, so it may appear more than once.
      else if (parsed.port !== 0 && listen.indexOf(address) !== i) {
        issues.at(at, `"${address}" is listed twice`);
      } else bound.push({ key: at, address, ...parsed });
    });
  }
  if (metrics_listen !== "" && !issues.within(["server", "metrics_listen"])) {
    const parsed = parseHostPort(metrics_listen);
    if (parsed)
      bound.push({ key: ["server", "metrics_listen"], address: metrics_listen, ...parsed });
    else {
      const got = JSON.stringify(metrics_listen);
      issues.at(["server", "metrics_listen"], `${HOST_PORT_HINT} or "", got ${got}`);
    }
  }
  checkListenerOverlaps(bound, issues);
  return bound;
}

function unknownModel(name: string, ids: readonly string[]): string {
  return `unknown model "${name}"${didYouMean(name, ids)}`;
}

/** Groups with the implicit default group added; `groupOf` maps every model to its group. */
export function buildGroups(
  file: ConfigFile,
  map: SourceMap,
  issues: Issues,
): { groups: Record<string, GroupConfig>; groupOf: Map<string, string> } {
  const ids = fileOrder(map, "models", Object.keys(file.models));
  const groups: Record<string, GroupConfig> = {};
  const groupOf = new Map<string, string>();
  for (const id of fileOrder(map, "groups", Object.keys(file.groups))) {
    if (issues.within(["groups", id])) continue;
    if (id === DEFAULT_GROUP) {
      issues.at(["groups", id], `"${DEFAULT_GROUP}" is the implicit group of ungrouped models`);
      continue;
    }
    const g = file.groups[id]!;
    g.members.forEach((member, i) => {
      const at = ["groups", id, "members", i];
      const owner = groupOf.get(member);
      if (!Object.hasOwn(file.models, member)) issues.at(at, unknownModel(member, ids));
      else if (owner === id) issues.at(at, `"${member}" is listed twice`);
      else if (owner !== undefined)
        issues.at(at, `model "${member}" is already in group "${owner}"`);
      else groupOf.set(member, id);
    });
    const members = g.members.filter((m, i) => g.members.indexOf(m) === i && groupOf.get(m) === id);
    groups[id] = {
      id,
      members,
      swap: g.swap,
      exclusive: g.exclusive,
      persistent: g.persistent,
      pool: g.pool,
    };
  }
  const ungrouped = ids.filter((id) => !groupOf.has(id));
  if (ungrouped.length > 0) {
    groups[DEFAULT_GROUP] = {
      id: DEFAULT_GROUP,
      members: ungrouped,
      swap: true,
      exclusive: true,
      persistent: false,
      pool: "vram",
    };
    for (const id of ungrouped) groupOf.set(id, DEFAULT_GROUP);
  }
  return { groups, groupOf };
}

export function buildMatrix(file: ConfigFile, issues: Issues): MatrixConfig {
  const ids = Object.keys(file.models);
  if (issues.within(["matrix"])) return { sets: [], evictCost: {} };
  const { sets, evict_cost } = file.matrix;
  sets.forEach((set, i) => {
    set.forEach((member, j) => {
      if (!Object.hasOwn(file.models, member))
        issues.at(["matrix", "sets", i, j], unknownModel(member, ids));
    });
  });
  for (const id of Object.keys(evict_cost)) {
    if (!Object.hasOwn(file.models, id))
      issues.at(["matrix", "evict_cost", id], unknownModel(id, ids));
  }
  return { sets: sets.map((s) => [...s]), evictCost: { ...evict_cost } };
}
