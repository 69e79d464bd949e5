/**
 * Port clashes a config can be checked for before anything binds: listeners that overlap
 * (`metrics_listen` on a `listen` port, `127.0.0.1:P` beside `0.0.0.0:P`), a model's fixed
 * port that is a listener's, and two models on one fixed port that may run at the same time.
 * Each is reported at the later key, naming the port and the key it collides with.
 */
import { isLoopbackName } from "../shared/net.ts";
import { displayPath, type Issues, type Path } from "./issues.ts";
import type { GroupConfig, MatrixConfig, ModelConfig } from "./types.ts";

/** A listener as written: its key, text and parsed parts. */
export interface BoundAddress {
  key: Path;
  address: string;
  host: string;
  port: number;
}

/** The addresses a host name stands for when bound (lower-case; `localhost` is both loopbacks). */
function addressesOf(host: string): string[] {
  const h = host.toLowerCase();
  if (h === "localhost") return ["127.0.0.1", "::1"];
  return [h === "[::]" ? "::" : h];
}

/**
 * Whether two hosts on one port collide when both are bound. `::` takes the port on every
 * address (Linux binds it dual-stack unless told otherwise); `0.0.0.0` on every IPv4 address,
 * and on any name, which may resolve to one; otherwise they collide when they name the same
 * address.
 */
export function hostsOverlap(a: string, b: string): boolean {
  const as = addressesOf(a);
  const bs = addressesOf(b);
  const wild = (xs: string[], w: string) => xs.includes(w);
  if (wild(as, "::") || wild(bs, "::")) return true;
  const v6 = (x: string) => x.includes(":");
  if (wild(as, "0.0.0.0")) return bs.some((x) => !v6(x));
  if (wild(bs, "0.0.0.0")) return as.some((x) => !v6(x));
  return as.some((x) => bs.includes(x));
}

const show = (b: BoundAddress) => `${displayPath(b.key)} ("${b.address}")`;

/**
 * Listeners that would take each other's port: `listen` entries among themselves (a second
 * identical entry is reported as "listed twice" before this runs) and `metrics_listen`
 * against every `listen` entry. Port 0 never clashes: the system picks a fresh port.
 */
export function checkListenerOverlaps(bound: readonly BoundAddress[], issues: Issues): void {
  bound.forEach((b, i) => {
    if (b.port === 0) return;
    const earlier = bound
      .slice(0, i)
      .find((o) => o.port === b.port && hostsOverlap(o.host, b.host));
    if (!earlier) return;
    issues.at(
      b.key,
      `port ${b.port} is also taken by ${show(earlier)}: ${why(earlier.host, b.host)}; give one of them another port`,
    );
  });
}

function why(a: string, b: string): string {
  const wildcard = [a, b].find((h) => ["0.0.0.0", "::", "[::]", ""].includes(h.toLowerCase()));
  if (wildcard !== undefined) return `"${wildcard}" takes the port on every address`;
  return a === b
    ? "one address cannot be listened on twice"
    : `"${a}" and "${b}" are the same address`;
}

/**
 * The fixed local port a model's proxy connects to, or null (`${PORT}`, a remote upstream);
 * `started` when its command (or env) names that port, i.e. qm starts a server there.
 */
function fixedPort(m: ModelConfig): { host: string; port: number; started: boolean } | null {
  if (m.node || m.variantOf || m.template.proxy.includes("$" + "{PORT}")) return null;
  let url: URL;
  try {
    url = new URL(m.proxy);
  } catch {
    return null;
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (!isLoopbackName(host) && host !== "0.0.0.0" && host !== "::") return null;
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  // Only a command that names the port is known to start a server there; one that does not
  // may proxy to a server that runs outside qm, which several models may name.
  const text = String(port);
  const started =
    m.argv.some((a) => a.includes(text)) || Object.values(m.env).some((v) => v.includes(text));
  return { host: host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host, port, started };
}

export interface ModelPortContext {
  listeners: readonly BoundAddress[];
  models: readonly ModelConfig[];
  groups: Record<string, GroupConfig>;
  policy: "group" | "matrix";
  matrix: MatrixConfig;
}

/** Whether two models may be running at the same time under the config's policy. */
function mayRunTogether(a: ModelConfig, b: ModelConfig, ctx: ModelPortContext): boolean {
  if (ctx.policy === "matrix") {
    return ctx.matrix.sets.some((set) => set.includes(a.id) && set.includes(b.id));
  }
  return !(a.group === b.group && ctx.groups[a.group]?.swap === true);
}

/**
 * A model's fixed port against qm's own listeners, and against every earlier model's: two
 * models whose commands start servers on one port clash unless the policy never runs them
 * together (one `swap` group, or no matrix set with both).
 */
export function checkModelPorts(ctx: ModelPortContext, issues: Issues): void {
  const seen: { model: ModelConfig; host: string; port: number }[] = [];
  for (const m of ctx.models) {
    const fixed = fixedPort(m);
    if (!fixed) continue;
    const at = ["models", m.id, "proxy"];
    const listener = ctx.listeners.find(
      (l) => l.port === fixed.port && hostsOverlap(l.host, fixed.host),
    );
    if (listener) {
      issues.at(
        at,
        `port ${fixed.port} is qm's own listener ${show(listener)}; give the model another port, or let qm choose one with \${PORT}`,
      );
      continue;
    }
    if (!fixed.started) continue;
    const other = seen.find(
      (o) =>
        o.port === fixed.port &&
        hostsOverlap(o.host, fixed.host) &&
        mayRunTogether(o.model, m, ctx),
    );
    if (other) {
      const apart =
        ctx.policy === "matrix"
          ? "keep them out of one matrix set"
          : "put both in one group with swap = true";
      issues.at(
        at,
        `port ${fixed.port} is also model "${other.model.id}"'s (${displayPath(["models", other.model.id, "proxy"])}), and both may run at once; give one of them another port (or \${PORT}), or ${apart}`,
      );
    }
    seen.push({ model: m, host: fixed.host, port: fixed.port });
  }
}
