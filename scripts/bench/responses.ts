/**
 * Section (g): what the Responses translation costs, measured as section (e) measures the
 * Anthropic one. The same streamed answer of `tokens` tokens from one text-stamped upstream
 * (stamp-upstream.ts `--stamp-text`), asked for through qm two ways:
 *
 * - passthrough: `POST /v1/chat/completions`, relayed byte for byte;
 * - translated: `POST /v1/responses` with `stream: true`, each chat chunk parsed and rewritten
 *   as `response.output_text.delta` events (src/api/chat/translated-body.ts,
 *   responses/translate/stream.ts).
 *
 * Each token's text is `<sent_ms>|`, the epoch ms at which the upstream wrote it, so the stamp
 * reaches the client on both routes. Per chunk: the client's receive time of the read that
 * completed the event minus that stamp; the routes' percentiles are compared. qm's CPU (utime +
 * stime from /proc) is read around each run and divided by the streams. Runs alternate between
 * the routes and are pooled.
 *
 * Alone: `bun scripts/bench/responses.ts` starts its own qm (the bench config) and prints one
 * JSON line; `scripts/bench.ts` runs it on its warm qm.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type StreamResult, stampedStreams } from "./load.ts";
import { withCleanup } from "./procs.ts";
import { ensureBuilt, load, MODELS, startQm } from "./qm.ts";
import { compareRoutes, type Route, type TranslationSetup } from "./translation.ts";

const PATHS: Record<Route, string> = {
  passthrough: "/v1/chat/completions",
  translated: "/v1/responses",
};

const TERMINATOR: Record<Route, string> = {
  passthrough: "data: [DONE]",
  translated: "event: response.completed",
};

/** A stamped token as it appears in a JSON string on either route: `"<epoch ms>|"`. */
const STAMP = /"(\d+(?:\.\d+)?)\|"/g;

function request(route: Route, model: string, tokens: number): RequestInit {
  const body =
    route === "passthrough"
      ? {
          model,
          stream: true,
          max_tokens: tokens,
          messages: [{ role: "user", content: "stream please" }],
        }
      : { model, stream: true, max_output_tokens: tokens, input: "stream please", store: false };
  return {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  };
}

function run(s: TranslationSetup, route: Route, tokens: number): Promise<StreamResult> {
  return stampedStreams({
    url: s.qmUrl + PATHS[route],
    init: request(route, s.model, tokens),
    streams: s.streams,
    expected: tokens,
    end: TERMINATOR[route],
    stamps: (complete) => [...complete.matchAll(STAMP)].map((m) => Number(m[1])),
  });
}

export function responsesRuns(s: TranslationSetup) {
  return compareRoutes("responses", s, (route, tokens) => run(s, route, tokens));
}

/** The figures against their targets (CPU ≤ 1.5× passthrough, p99 added ≤ 1 ms). */
export function responsesTargets(g: Awaited<ReturnType<typeof responsesRuns>>) {
  const target = (value: number, limit: number) => ({
    value,
    target: limit,
    op: "<=",
    met: value <= limit,
  });
  return {
    responses_cpu_ratio: target(g.cpu_ratio, 1.5),
    responses_added_ms_p99: target(g.added_ms_p99_over_passthrough, 1),
  };
}

/** Section (g)'s shape, as it is measured here and in bench.ts. */
export const RESPONSES_BENCH = { streams: 20, tokens: 1000, tokenMs: 5, rounds: 2 };

if (import.meta.main) {
  const dir = mkdtempSync(join(tmpdir(), "qm-bench-responses-"));
  await withCleanup(
    async () => {
      await ensureBuilt();
      const qm = await startQm(dir, {
        tokens: 10,
        tokenMs: 10,
        loadDelayMs: 250,
        readyFile: join(dir, "ready.json"),
        anthropicTokens: RESPONSES_BENCH.tokens,
        anthropicTokenMs: RESPONSES_BENCH.tokenMs,
      });
      const up = await load(qm, MODELS.anthropic);
      const g = await responsesRuns({
        qmUrl: qm.url,
        qmPid: qm.pid,
        ours: () => [process.pid, qm.pid, up.pid],
        model: MODELS.anthropic,
        streams: RESPONSES_BENCH.streams,
        tokens: RESPONSES_BENCH.tokens,
        rounds: RESPONSES_BENCH.rounds,
      });
      process.stdout.write(`${JSON.stringify({ responses: g, targets: responsesTargets(g) })}\n`);
    },
    () => rmSync(dir, { recursive: true, force: true }),
  );
}
