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

export function nodeModel(peer: PeerConfig, remote: string, discovered = false): ModelConfig {
  const node = peer.node!;
  return {
    id: nodeModelId(peer.id, remote),
    cmd: "",
    argv: [],
    proxy: peer.url,
    port: null,
    checkEndpoint: null,
    cmdStop: "",
    aliases: [],
    env: {},
    ttlS: 0,
    concurrencyLimit: 0,
    estVramGb: node.estVramGb[remote] ?? 0,
    estRamGb: 0,
    sendLoadingState: true,
    unlisted: false,
    useModelName: remote,
    params: null,
    anthropicNative: false,
    responsesNative: false,
    stopTimeoutS: 0,
    firstByteTimeoutMs: peer.timeoutMs,
    stallTimeoutMs: 0,
    scrapeUpstreamMetrics: false,
    group: DEFAULT_GROUP,
    template: {
      cmd: "",
      proxy: peer.url,
      checkEndpoint: "",
      cmdStop: "",
      useModelName: remote,
      env: {},
    },
    node: {
      node: peer.id,
      apiKey: peer.apiKey,
      remote,
      pinned: node.pinned.includes(remote),
      discovered,
    },
  };
}
