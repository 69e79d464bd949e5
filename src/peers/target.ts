/**
 * A peer's model as the exchange sees it: a `ModelConfig` with `peer` set. Its `proxy` is the
 * peer's URL, its first-byte limit the peer's `timeout_s`, and the name sent upstream the
 * peer's own name for it; nothing of it is ever started, leased or held here.
 */
import { remoteModel } from "../config/node-models.ts";
import type { ModelConfig, PeerConfig } from "../config/types.ts";

/** `id` is the name it is listed and recorded under (`box2/llama` or a bare `llama`). */
export function peerModel(peer: PeerConfig, remote: string, id: string): ModelConfig {
  return {
    ...remoteModel({
      id,
      url: peer.url,
      remote,
      firstByteTimeoutMs: peer.timeoutMs,
      estVramGb: 0,
      // The peer answers its own wait (a qm peer relays its `: qm-status` comments).
      sendLoadingState: false,
    }),
    peer: { peer: peer.id, apiKey: peer.apiKey, remote },
  };
}

/** The peer's key, as both schemes OpenAI- and Anthropic-style servers read. */
export function peerCredentials(apiKey: string): [string, string][] {
  if (apiKey === "") return [];
  return [
    ["authorization", `Bearer ${apiKey}`],
    ["x-api-key", apiKey],
  ];
}

/**
 * What a request sent to a peer carries: the key, and `x-qm-forwarded` — a qm that gets it
 * serves the model locally or answers 404, never sends it on (two boxes that are each other's
 * peers cannot pass a request round).
 */
export function peerRequestHeaders(apiKey: string): [string, string][] {
  return [...peerCredentials(apiKey), ["x-qm-forwarded", "1"]];
}

/**
 * A peer's URL as qm shows it (`/api/status`, `/api/events`, its log): a password written in
 * it (`http://user:PASS@host`) as `***`. The URL itself, credentials and all, is what qm
 * fetches: fetch sends them as Basic auth (RFC 7617).
 */
export function shownUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.password === "" && parsed.username === "") return url;
  const at = url.indexOf("@", url.indexOf("//") + 2);
  const user = parsed.username === "" ? "" : parsed.username;
  return `${parsed.protocol}//${user}${parsed.password === "" ? "" : ":***"}@${url.slice(at + 1)}`;
}
