/**
 * Section (e): what translation costs. The same streamed answer of `tokens` tokens from one
 * text-stamped upstream (stamp-upstream.ts `--stamp-text`), asked for through qm two ways:
 *
 * - passthrough: `POST /v1/chat/completions`, relayed byte for byte;
 * - translated: `POST /v1/messages`, each OpenAI chunk parsed and rewritten as Anthropic
 *   `content_block_delta` events (src/api/chat/translated-body.ts, anthropic/translate/stream.ts).
 *
 * Each token's text is `<sent_ms>|`, the epoch ms at which the upstream wrote it, so the stamp
 * reaches the client on both routes (a side field would not survive translation). Per chunk:
 * the client's receive time of the read that completed the event minus that stamp; the two
 * routes' percentiles are compared, so loopback and the client's own scheduling cancel out.
 * qm's CPU (utime + stime from /proc) is read around each run and divided by the streams.
 *
 * Runs alternate between the routes (P T, then T P, …) and are pooled, so a neighbour that
 * starts or stops mid-way skews both routes rather than one.
 */
import { type StreamResult, stampedStreams } from "./load.ts";
import { compareRoutes, type Route, type TranslationSetup } from "./translation.ts";

const PATHS: Record<Route, string> = {
  passthrough: "/v1/chat/completions",
  translated: "/v1/messages",
};

/** How each route says the stream ended normally. */
const TERMINATOR: Record<Route, string> = {
  passthrough: "data: [DONE]",
  translated: "event: message_stop",
};

/** A stamped text as it appears in a JSON string on either route: `"<epoch ms>|"`. */
const STAMP = /"(\d+(?:\.\d+)?)\|"/g;

function request(route: Route, model: string, tokens: number): RequestInit {
  const messages = [{ role: "user", content: "stream please" }];
  const body = JSON.stringify({ model, stream: true, max_tokens: tokens, messages });
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (route === "translated") headers["anthropic-version"] = "2023-06-01";
  return { method: "POST", headers, body };
}

/** `streams` concurrent streams of `tokens` stamped tokens through one route. */
function run(s: TranslationSetup, route: Route, tokens: number): Promise<StreamResult> {
  return stampedStreams({
    url: s.qmUrl + PATHS[route],
    init: request(route, s.model, tokens),
    streams: s.streams,
    expected: tokens,
    end: TERMINATOR[route],
    // Each token's text is `<sent_ms>|`, inside whichever event the route carries it in.
    stamps: (complete) => [...complete.matchAll(STAMP)].map((m) => Number(m[1])),
  });
}

export function anthropicRuns(s: TranslationSetup) {
  return compareRoutes("anthropic", s, (route, tokens) => run(s, route, tokens));
}
