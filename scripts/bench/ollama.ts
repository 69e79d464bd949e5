/**
 * Section (g): what the Ollama translation costs, measured as section (e) measures the
 * Anthropic one (scripts/bench/anthropic.ts): the same streamed answer of `tokens` tokens from
 * the text-stamped upstream, asked for through qm two ways:
 *
 * - passthrough: `POST /v1/chat/completions`, relayed byte for byte;
 * - translated: `POST /api/chat`, each OpenAI chunk parsed and rewritten as an NDJSON line
 *   (src/api/chat/translated-body.ts, ollama/stream.ts).
 *
 * Each token's text is `<sent_ms>|` (the upstream's send time), so the stamp reaches the client
 * on both routes; per chunk, the receive time of the read that completed its line or event
 * minus that stamp. qm's CPU is read around each run and divided by the streams. Runs
 * alternate between the routes and are pooled.
 *
 * `bun scripts/bench/ollama.ts` runs this section alone (its own qm, one model) and prints one
 * JSON line; `bun run bench` runs it with the rest.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type StreamResult, stampedStreams } from "./load.ts";
import { withCleanup } from "./procs.ts";
import { ensureBuilt, load, MODELS, startQm } from "./qm.ts";
import { compareRoutes, type Route, type TranslationSetup } from "./translation.ts";

const ROUTES: Record<Route, { path: string; end: string; separator: string }> = {
  passthrough: { path: "/v1/chat/completions", end: "data: [DONE]", separator: "\n\n" },
  translated: { path: "/api/chat", end: '"done":true', separator: "\n" },
};

/** A stamped text as it appears in a JSON string on either route: `"<epoch ms>|"`. */
const STAMP = /"(\d+(?:\.\d+)?)\|"/g;

function request(route: Route, model: string, tokens: number): RequestInit {
  const messages = [{ role: "user", content: "stream please" }];
  const body =
    route === "translated"
      ? { model, stream: true, options: { num_predict: tokens }, messages }
      : { model, stream: true, max_tokens: tokens, messages };
  return {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  };
}

function run(s: TranslationSetup, route: Route, tokens: number): Promise<StreamResult> {
  const r = ROUTES[route];
  return stampedStreams({
    url: s.qmUrl + r.path,
    init: request(route, s.model, tokens),
    streams: s.streams,
    expected: tokens,
    end: r.end,
    separator: r.separator,
    stamps: (complete) => [...complete.matchAll(STAMP)].map((m) => Number(m[1])),
  });
}

export function ollamaRuns(s: TranslationSetup) {
  return compareRoutes("ollama", s, (route, tokens) => run(s, route, tokens));
}

/** The section alone, with the figures `bun run bench` uses for it. */
async function alone(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "qm-bench-ollama-"));
  await withCleanup(
    async () => {
      // Alone, the binary is rebuilt when stale: this section exists to measure the current code.
      const stale = await ensureBuilt(true);
      const setup = {
        tokens: 10,
        tokenMs: 10,
        loadDelayMs: 0,
        readyFile: join(dir, "ready.json"),
        anthropicTokens: 1000,
        anthropicTokenMs: 5,
      };
      const qm = await startQm(dir, setup);
      const up = await load(qm, MODELS.anthropic);
      const g = await ollamaRuns({
        qmUrl: qm.url,
        qmPid: qm.pid,
        ours: () => [process.pid, qm.pid, up.pid],
        model: MODELS.anthropic,
        streams: 20,
        tokens: 1000,
        rounds: 2,
      });
      const targets = {
        ollama_cpu_ratio: { value: g.cpu_ratio, target: 1.5, met: g.cpu_ratio <= 1.5 },
        ollama_added_ms_p99: {
          value: g.added_ms_p99_over_passthrough,
          target: 1,
          met: g.added_ms_p99_over_passthrough <= 1,
        },
      };
      process.stdout.write(
        `${JSON.stringify({ ollama: g, targets, qm_binary_older_than_src: stale })}\n`,
      );
    },
    () => rmSync(dir, { recursive: true, force: true }),
  );
}

if (import.meta.main) await alone();
