/**
 * A model's port must be free before the model starts: whatever already answers there would
 * pass the readiness poll and be sent the client's prompts. With `${PORT}` qm moves the model
 * to a port nobody holds (re-rendering its command from its template); a port the user wrote
 * in the config cannot move, so the start fails naming the process that holds it.
 */
import { splitCommand } from "../config/argv.ts";
import type { ModelConfig } from "../config/types.ts";
import { withContextSize } from "../config/variant.ts";
import { platform } from "../platform/index.ts";
import type { ProcFs } from "../platform/types.ts";
import { isLoopbackName } from "../shared/net.ts";

// The macros a template still holds (spelled out: they are literal text, not templates).
const PORT = "$" + "{PORT}";
const MODEL_ID = "$" + "{MODEL_ID}";

/** The model's port and whether qm chose it, or null when its upstream is not local. */
export function portOf(model: ModelConfig): { port: number; movable: boolean } | null {
  let url: URL;
  try {
    url = new URL(model.proxy);
  } catch {
    return null;
  }
  // A listener on the wildcard address is reached through loopback too.
  if (!isLoopbackName(url.hostname) && url.hostname !== "0.0.0.0") return null;
  const t = model.template;
  // Moving helps only when both what the server listens on and what qm connects to follow.
  const serverFollows = t.cmd.includes(PORT) || Object.values(t.env).some((v) => v.includes(PORT));
  if (model.port !== null && t.proxy.includes(PORT) && serverFollows) {
    return { port: model.port, movable: true };
  }
  if (url.port === "") return null;
  const port = Number(url.port);
  // A command that never names the port, with readiness unchecked, proxies to a server that
  // runs elsewhere (the process is a placeholder or a companion of it): that server is meant
  // to be listening already, so there is nothing to guard.
  const text = String(port);
  const named =
    model.argv.some((a) => a.includes(text)) ||
    Object.values(model.env).some((v) => v.includes(text));
  if (!named && model.checkEndpoint === null) return null;
  return { port, movable: false };
}

/** The model with `${PORT}` rendered as `port` again; same id, command, proxy, env. */
export function withPort(model: ModelConfig, port: number): ModelConfig {
  // A ?ctx= variant is rendered from its base's template with the base's id (mintVariant).
  const id = model.variantOf?.base ?? model.id;
  const fill = (s: string) => s.replaceAll(PORT, String(port)).replaceAll(MODEL_ID, id);
  const t = model.template;
  const cmd = fill(t.cmd);
  const argv = model.variantOf
    ? withContextSize(splitCommand(cmd), model.variantOf.ctx)
    : splitCommand(cmd);
  const check = fill(t.checkEndpoint);
  return {
    ...model,
    cmd: model.variantOf ? argv.join(" ") : cmd,
    argv,
    proxy: fill(t.proxy).replace(/\/+$/, ""),
    port,
    checkEndpoint: check === "none" ? null : check,
    cmdStop: fill(t.cmdStop),
    useModelName: fill(t.useModelName),
    env: Object.fromEntries(Object.entries(t.env).map(([k, v]) => [k, fill(v)])),
  };
}

/** Who holds a port: pid and command name, when /proc lets us see it. */
export interface Holder {
  pid: number;
  comm: string;
  start: number;
}

export interface PortProbe {
  fs: ProcFs;
  /** The bind test, where /proc is missing. */
  bindable(port: number): boolean;
}

/**
 * False only when something listens there (EADDRINUSE): a port below 1024 that qm may not
 * bind itself can still be free for a model started with the right to.
 */
function bindable(port: number): boolean {
  try {
    Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } }).stop(true);
    return true;
  } catch (err) {
    return (err as { code?: unknown }).code !== "EADDRINUSE";
  }
}

export const realProbe: PortProbe = { fs: platform.procs, bindable };

/** Inodes of the sockets listening on `port` at a loopback or wildcard address. */
export function listenerInodes(port: number, probe: PortProbe = realProbe): Set<string> {
  if (!probe.fs.available) return new Set();
  return new Set(
    probe.fs
      .listeners()
      .filter((l) => l.port === port && l.local)
      .map((l) => l.inode),
  );
}

/**
 * Where /proc is there it is the whole truth: a socket in LISTEN state at a loopback or
 * wildcard address. Elsewhere (no /proc, or Darwin's lsof, which sees only this user's
 * sockets) qm tries to bind 127.0.0.1 itself.
 */
export function portBusy(port: number, probe: PortProbe = realProbe): boolean {
  // A bind is cheap (tens of µs) and no listener lets it through (qm's probe asks for no
  // SO_REUSEPORT); only a port it cannot bind is read from /proc, the whole truth (some other
  // socket may hold the address without listening), which can take milliseconds.
  if (probe.bindable(port)) return false;
  return probe.fs.available && probe.fs.listenersComplete
    ? listenerInodes(port, probe).size > 0
    : true;
}

/** `listenerInodes`, read without blocking where the platform can. */
export async function listenerInodesAsync(
  port: number,
  probe: PortProbe = realProbe,
): Promise<Set<string>> {
  const fs = probe.fs;
  if (!fs.available) return new Set();
  const all = fs.listenersAsync ? await fs.listenersAsync() : fs.listeners();
  return new Set(all.filter((l) => l.port === port && l.local).map((l) => l.inode));
}

/** The process holding one of `inodes` (a full /proc scan: only when something is wrong). */
export function findHolder(inodes: Set<string>, fs: ProcFs): Holder | null {
  if (inodes.size === 0) return null;
  for (const e of fs.list()) {
    const sockets = fs.socketInodes(e.pid);
    if (!sockets) continue;
    for (const inode of inodes) {
      if (sockets.has(inode)) return { pid: e.pid, comm: e.comm, start: e.start };
    }
  }
  return null;
}

export function holderOf(port: number, probe: PortProbe = realProbe): Holder | null {
  return findHolder(listenerInodes(port, probe), probe.fs);
}

/** "pid 123 (llama-server)", or a hint for finding it. */
export function describeHolder(port: number, holder: Holder | null): string {
  return holder
    ? `pid ${holder.pid} (${holder.comm})`
    : `another process (\`${platform.portHint(port)}\` names it)`;
}

/**
 * After the health check answered 200: is the listener on the port the model's? "foreign"
 * only when a process outside the model's tree that was already running before the model
 * was spawned holds it. A holder qm cannot see (another user's, e.g. docker-proxy) or one
 * started after the model (a container runtime's port forwarder) is given the benefit of
 * the doubt, and so is a port nobody listens on here (a remote or namespaced upstream).
 */
export function listenerOwnership(
  port: number,
  members: readonly number[],
  leaderStart: number,
  probe: PortProbe = realProbe,
): { kind: "ours" | "unknown" } | { kind: "foreign"; holder: Holder } {
  return ownershipOf(listenerInodes(port, probe), () => members, leaderStart, probe);
}

export type Ownership = { kind: "ours" | "unknown" } | { kind: "foreign"; holder: Holder };

/**
 * `listenerOwnership` for the listening sockets `inodes`. `leader`, when given, is asked
 * first (the server itself usually holds its socket), so the model's whole tree is read
 * (`members`) only when it does not.
 */
export function ownershipOf(
  inodes: Set<string>,
  members: () => readonly number[],
  leaderStart: number,
  probe: PortProbe = realProbe,
  leader?: number,
): Ownership {
  if (inodes.size === 0) return { kind: "unknown" };
  const holds = (pid: number) => {
    const sockets = probe.fs.socketInodes(pid);
    return sockets !== null && [...inodes].some((i) => sockets.has(i));
  };
  if (leader !== undefined && holds(leader)) return { kind: "ours" };
  const all = members();
  for (const pid of all) if (pid !== leader && holds(pid)) return { kind: "ours" };
  const holder = findHolder(inodes, probe.fs);
  if (holder && holder.start >= 0 && leaderStart >= 0 && holder.start < leaderStart) {
    if (!all.includes(holder.pid)) return { kind: "foreign", holder };
  }
  return { kind: "unknown" };
}

/** Ports of every model this qm supervises (by id), so a moved model avoids the others'. */
const claimed = new Map<string, number>();

export function claimPort(model: ModelConfig): void {
  const p = portOf(model);
  if (p) claimed.set(model.id, p.port);
  else claimed.delete(model.id);
}

/** A free port for `model`, searched upward from `from` (then below it); null if none. */
export function pickPort(model: ModelConfig, from: number, probe = realProbe): number | null {
  const others = new Set([...claimed].filter(([id]) => id !== model.id).map(([, p]) => p));
  const ok = (p: number) => !others.has(p) && !portBusy(p, probe);
  for (let p = from + 1; p <= 65535; p++) if (ok(p)) return p;
  for (let p = 1024; p < from; p++) if (ok(p)) return p;
  return null;
}
