/**
 * The models of managed mistral.rs nodes (`[peers.NAME] kind = "mistralrs"`) as models of this
 * box's scheduler: `NODE/MODEL`, served at the node's URL, loaded and unloaded over its HTTP API,
 * never spawned (src/peers/mistralrs.md).
 */
import { DEFAULT_GROUP, type ModelConfig, type PeerConfig } from "./types.ts";

/** The id a node's model is scheduled and listed under. */
export function nodeModelId(node: string, remote: string): string {
  return `${node}/${remote}`;
}

/** The models a node's config names: `models`, the keys of `est_vram_gb`, `pinned`, in that order. */
export function namedNodeModels(peer: PeerConfig): string[] {
  if (!peer.node) return [];
  return [...new Set([...peer.models, ...Object.keys(peer.node.estVramGb), ...peer.node.pinned])];
}

/**
 * A model served elsewhere (a peer, a node): nothing of it is ever spawned here; `proxy` is the
 * other box's URL and `useModelName` its name for the model.
 */
export function remoteModel(o: {
  id: string;
  url: string;
  remote: string;
  firstByteTimeoutMs: number;
  estVramGb: number;
  sendLoadingState: boolean;
}): ModelConfig {
  return {
    id: o.id,
    cmd: "",
    argv: [],
    proxy: o.url,
    port: null,
    checkEndpoint: null,
    cmdStop: "",
    aliases: [],
    env: {},
    ttlS: 0,
    concurrencyLimit: 0,
    estVramGb: o.estVramGb,
    estRamGb: 0,
    sendLoadingState: o.sendLoadingState,
    unlisted: false,
    useModelName: o.remote,
    params: null,
    anthropicNative: false,
    evict: "stop",
    sleepLevel: 1,
    responsesNative: false,
    stopTimeoutS: 0,
    firstByteTimeoutMs: o.firstByteTimeoutMs,
    // Silences while the other box loads are its business; its own limits apply there.
    stallTimeoutMs: 0,
    scrapeUpstreamMetrics: false,
    keepKv: null,
    ctxStep: 1,
    // Its files, if any, are on the other box.
    prefetch: false,
    group: DEFAULT_GROUP,
    template: {
      cmd: "",
      proxy: o.url,
      checkEndpoint: "",
      cmdStop: "",
      useModelName: o.remote,
      env: {},
    },
  };
}

export function nodeModel(peer: PeerConfig, remote: string, discovered = false): ModelConfig {
  const node = peer.node!;
  return {
    ...remoteModel({
      id: nodeModelId(peer.id, remote),
      url: peer.url,
      remote,
      firstByteTimeoutMs: peer.timeoutMs,
      estVramGb: node.estVramGb[remote] ?? 0,
      // A node's load is this box's to report, with wait-status comments like a local one.
      sendLoadingState: true,
    }),
    node: {
      node: peer.id,
      apiKey: peer.apiKey,
      remote,
      pinned: node.pinned.includes(remote),
      discovered,
    },
  };
}
