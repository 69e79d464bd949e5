/**
 * Peers (`[peers.NAME]`): URL checks, the names their models may not take, and a managed
 * node's settings. Expanded after the models, in file order (./build-models.ts).
 */
import { SplitCommandError, splitCommand } from "./argv.ts";
import { type BuildContext, expandAt, fileOrder, isHttpUrl, refusedName } from "./build-models.ts";
import type { Path } from "./issues.ts";
import { render } from "./macros.ts";
import type { ConfigFile, PeerFile } from "./schema.ts";
import type { NodeSettings, PeerConfig } from "./types.ts";

/** The model names a peer's config lists (`models`; a node's `est_vram_gb` keys and `pinned`). */
function refusedPeerModels(ctx: BuildContext, id: string, p: PeerFile): boolean {
  const named: [Path, string][] = [
    ...p.models.map((m, i): [Path, string] => [["peers", id, "models", i], m]),
    ...Object.keys(p.est_vram_gb).map((m): [Path, string] => [["peers", id, "est_vram_gb", m], m]),
    ...p.pinned.map((m, i): [Path, string] => [["peers", id, "pinned", i], m]),
  ];
  let refused = false;
  for (const [path, m] of named) {
    const hint = "qm cannot route to a name it cannot send back in X-QM-Model";
    if (refusedName(ctx, path, `model ${JSON.stringify(m)}`, m, hint)) refused = true;
  }
  return refused;
}

function buildPeer(ctx: BuildContext, id: string, p: PeerFile): PeerConfig | undefined {
  const named = `peer name ${JSON.stringify(id)}`;
  if (refusedName(ctx, ["peers", id], named, id, "name it in ASCII or Latin-1")) return undefined;
  if (refusedPeerModels(ctx, id, p)) return undefined;
  checkNodeKeys(ctx, id, p);
  const url = expandAt(ctx, ["peers", id, "url"], p.url, []);
  const apiKey = expandAt(ctx, ["peers", id, "api_key"], p.api_key, []);
  const models = p.models.map((m, i) => expandAt(ctx, ["peers", id, "models", i], m, []));
  if ([url, apiKey, ...models].some((e) => e.failed)) return undefined;
  const base = render(url.segments).replace(/\/+$/, "");
  if (!isHttpUrl(base)) {
    ctx.issues.at(["peers", id, "url"], `expected an http(s) URL, got ${JSON.stringify(base)}`);
  }
  if (p.kind === "openai" && p.models.length === 0) {
    // An OpenAI endpoint says nothing of what it serves that qm could route by.
    ctx.issues.at(["peers", id, "models"], 'a peer of kind "openai" must list its models');
  }
  return {
    id,
    url: base,
    kind: p.kind,
    apiKey: render(apiKey.segments),
    models: models.map((e) => render(e.segments)),
    timeoutMs: Math.round(p.timeout_s * 1000),
    weight: p.weight,
    pollMs: Math.round(p.poll_s * 1000),
    node: p.kind === "mistralrs" ? buildNode(ctx, id, p) : null,
  };
}

/** The keys only a managed node (`kind = "mistralrs"`) reads. */
const NODE_KEYS = [
  "vram_budget_gb",
  "est_vram_gb",
  "max_loaded",
  "pinned",
  "defrag_after_cycles",
  "restart_cmd",
] as const;

/** A peer's keys that only a managed node reads: refused elsewhere, rather than ignored. */
function checkNodeKeys(ctx: BuildContext, id: string, p: PeerFile): void {
  if (p.kind === "mistralrs") return;
  const defaults: Record<(typeof NODE_KEYS)[number], unknown> = {
    vram_budget_gb: 0,
    est_vram_gb: {},
    max_loaded: 0,
    pinned: [],
    defrag_after_cycles: 0,
    restart_cmd: "",
  };
  for (const key of NODE_KEYS) {
    if (!Bun.deepEquals(p[key], defaults[key])) {
      ctx.issues.at(
        ["peers", id, key],
        `only a peer of kind "mistralrs" (a managed node) reads ${key}`,
      );
    }
  }
}

function buildNode(ctx: BuildContext, id: string, p: PeerFile): NodeSettings {
  let restartArgv: string[] = [];
  const cmd = expandAt(ctx, ["peers", id, "restart_cmd"], p.restart_cmd, []);
  if (!cmd.failed) {
    try {
      restartArgv = splitCommand(render(cmd.segments));
    } catch (err) {
      if (!(err instanceof SplitCommandError)) throw err;
      ctx.issues.at(["peers", id, "restart_cmd"], err.message);
    }
  }
  if (p.defrag_after_cycles > 0 && restartArgv.length === 0 && !cmd.failed) {
    ctx.issues.at(
      ["peers", id, "defrag_after_cycles"],
      'a defrag restart needs restart_cmd (how to restart the node, e.g. "systemctl restart mistralrs")',
    );
  }
  return {
    vramBudgetGb: p.vram_budget_gb,
    estVramGb: { ...p.est_vram_gb },
    maxLoaded: p.max_loaded,
    pinned: [...new Set(p.pinned)],
    defragAfterCycles: p.defrag_after_cycles,
    restartArgv,
  };
}

export function buildPeers(ctx: BuildContext, file: ConfigFile): Record<string, PeerConfig> {
  const peers: Record<string, PeerConfig> = {};
  for (const id of fileOrder(ctx.map, "peers", Object.keys(file.peers))) {
    if (ctx.issues.within(["peers", id])) continue;
    const peer = buildPeer(ctx, id, file.peers[id]!);
    if (peer) peers[id] = peer;
  }
  return peers;
}
