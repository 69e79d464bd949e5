/**
 * Model servers' own metrics in qm's scrape (src/observe/upstream.ts): fetched in parallel,
 * labelled and merged after qm's; a server that fails, hangs, answers too much or not in the
 * text format is left out of that scrape and counted, and never fails qm's own.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { QmMetrics } from "../../src/observe/prometheus.ts";
import type { UpstreamOptions, UpstreamTarget } from "../../src/observe/upstream.ts";
import { fakeGateway, modelToml } from "../support/fake-gateway.ts";
import { colonLint } from "./lint.ts";

const LLAMA = (n: number) => `# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total ${n}
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
# HELP llamacpp:request_duration_seconds Request durations.
# TYPE llamacpp:request_duration_seconds histogram
llamacpp:request_duration_seconds_bucket{le="0.5"} 1
llamacpp:request_duration_seconds_bucket{le="+Inf"} 2
llamacpp:request_duration_seconds_sum 1.5
llamacpp:request_duration_seconds_count 2
`;

type Answer = () => Promise<Response>;

/** QmMetrics over a fake gateway's state, with upstream answers per URL and time limits the test ends. */
function setup(answers: Record<string, Answer>, opts: UpstreamOptions = {}) {
  const gw = fakeGateway(
    `[server]\nlog_level = "error"\n${modelToml("a", { url: "http://127.0.0.1:9" })}`,
  );
  const warnings: string[] = [];
  const limits: AbortController[] = [];
  const fetched: string[] = [];
  let targets: UpstreamTarget[] = Object.keys(answers).map((model) => ({
    model,
    url: `http://${model}.test/metrics`,
  }));
  /** Each fetch takes 250 ms of this clock. */
  let clock = 0;
  const metrics = new QmMetrics({
    gauges: () => gw.gauges(),
    upstreams: () => targets,
    now: () => 0,
    upstream: {
      warn: (line) => warnings.push(line),
      fetch: (url, init) => {
        fetched.push(url);
        clock += 250;
        expect(new Headers(init.headers).get("accept")).toContain("text/plain;version=0.0.4");
        expect((init as { proxy?: unknown }).proxy).toBe(false);
        const model = new URL(url).hostname.replace(/\.test$/, "");
        return answers[model]!();
      },
      timeout: () => {
        const c = new AbortController();
        limits.push(c);
        return c.signal;
      },
      now: () => clock,
      ...opts,
    },
  });
  return {
    metrics,
    warnings,
    limits,
    fetched,
    setTargets: (t: UpstreamTarget[]) => {
      targets = t;
    },
  };
}

const text =
  (body: string, init: ResponseInit = {}) =>
  () =>
    Promise.resolve(new Response(body, { headers: { "content-type": "text/plain" }, ...init }));

const value = (scrape: string, line: string) =>
  scrape
    .split("\n")
    .find((l) => l.startsWith(`${line} `))
    ?.slice(line.length + 1) ?? null;

describe("upstream metrics in qm's scrape", () => {
  test("two servers' series follow qm's own, each labelled with its model, one HELP and TYPE per family", async () => {
    const { metrics, fetched } = setup({ a: text(LLAMA(10)), b: text(LLAMA(20)) });
    const scrape = await metrics.text();
    expect(fetched).toEqual(["http://a.test/metrics", "http://b.test/metrics"]);
    expect(value(scrape, 'llamacpp:prompt_tokens_total{model="a"}')).toBe("10");
    expect(value(scrape, 'llamacpp:prompt_tokens_total{model="b"}')).toBe("20");
    expect(value(scrape, 'llamacpp:request_duration_seconds_bucket{model="b",le="+Inf"}')).toBe(
      "2",
    );
    expect(scrape.match(/^# TYPE llamacpp:prompt_tokens_total counter$/gm)).toHaveLength(1);
    expect(scrape.match(/^# HELP llamacpp:request_duration_seconds /gm)).toHaveLength(1);
    // qm's own come first, untouched.
    expect(scrape.indexOf("qm_info")).toBeLessThan(scrape.indexOf("llamacpp:"));
    expect(value(scrape, 'qm_upstream_scrape_errors_total{model="a"}')).toBeNull();
    // Both were under way at once: each took the time from its own start to its own end.
    expect(value(scrape, 'qm_upstream_scrape_duration_seconds{model="a"}')).toBe("0.5");
    expect(value(scrape, 'qm_upstream_scrape_duration_seconds{model="b"}')).toBe("0.25");
  });

  test("a failing, a malformed and an oversized server are left out and counted; the others are not", async () => {
    const big = "x 1\n".repeat(400);
    const { metrics, warnings } = setup(
      {
        good: text(LLAMA(1)),
        down: text("boom", { status: 500 }),
        garbled: text("<html>not metrics</html>\n"),
        huge: text(big),
        streamed: () =>
          Promise.resolve(
            new Response(
              new ReadableStream({
                start(c) {
                  for (let i = 0; i < 400; i++) c.enqueue(new TextEncoder().encode("x 1\n"));
                  c.close();
                },
              }),
            ),
          ),
        refused: () => Promise.reject(new TypeError("connection refused")),
      },
      { maxBytes: 1000 },
    );
    const scrape = await metrics.text();
    expect(value(scrape, 'llamacpp:prompt_tokens_total{model="good"}')).toBe("1");
    for (const m of ["down", "garbled", "huge", "streamed", "refused"]) {
      expect({ m, errors: value(scrape, `qm_upstream_scrape_errors_total{model="${m}"}`) }).toEqual(
        {
          m,
          errors: "1",
        },
      );
      const shown = scrape
        .split("\n")
        .filter((l) => !l.startsWith("qm_") && l.includes(`model="${m}"`));
      expect({ m, shown }).toEqual({ m, shown: [] });
    }
    expect(scrape).not.toContain('x{model="huge"}');
    expect(scrape).not.toContain('x{model="streamed"}');
    expect(warnings.sort()).toEqual(
      [
        "metrics of model down left out: GET http://down.test/metrics answered HTTP 500",
        `metrics of model garbled left out: not the text format: line 1: invalid metric name in "<html>not metrics</html>"`,
        "metrics of model huge left out: answer larger than 1000 bytes",
        "metrics of model streamed left out: answer larger than 1000 bytes",
        "metrics of model refused left out: connection refused",
      ].sort(),
    );
    // The same failures again are counted, not said again.
    const again = await metrics.text();
    expect(value(again, 'qm_upstream_scrape_errors_total{model="down"}')).toBe("2");
    expect(warnings).toHaveLength(5);
  });

  test("a server that never answers (even one deaf to its abort signal) is cut at the time limit", async () => {
    const { metrics, limits, warnings } = setup({
      slow: () => new Promise<Response>(() => {}),
      good: text(LLAMA(3)),
    });
    const pending = metrics.text();
    expect(limits).toHaveLength(2); // each fetch got its limit at once, in parallel
    limits[0]!.abort(new DOMException("timed out", "TimeoutError"));
    const scrape = await pending;
    expect(value(scrape, 'llamacpp:prompt_tokens_total{model="good"}')).toBe("3");
    expect(value(scrape, 'qm_upstream_scrape_errors_total{model="slow"}')).toBe("1");
    expect(warnings).toEqual(["metrics of model slow left out: no answer within 1000 ms"]);
  });

  test("a family named like one of qm's is dropped, said once", async () => {
    const { metrics, warnings } = setup({
      a: text("# TYPE qm_requests_total counter\nqm_requests_total 99\nfine 1\n"),
    });
    const scrape = await metrics.text();
    expect(scrape).not.toContain("99");
    expect(value(scrape, 'fine{model="a"}')).toBe("1");
    await metrics.text();
    expect(warnings).toEqual([
      "metrics of model a: family qm_requests_total dropped: its name is qm's own (qm_…)",
    ]);
  });

  test("a model no longer scraped (stopped) loses its duration gauge; its error count stays", async () => {
    const { metrics, setTargets } = setup({ a: text("boom", { status: 503 }) });
    await metrics.text();
    setTargets([]);
    const scrape = await metrics.text();
    expect(value(scrape, 'qm_upstream_scrape_duration_seconds{model="a"}')).toBeNull();
    expect(value(scrape, 'qm_upstream_scrape_errors_total{model="a"}')).toBe("1");
  });

  test.skipIf(!Bun.which("promtool"))(
    "promtool parses the merged scrape; its only complaints are the engines' own colon names (skipped without promtool)",
    async () => {
      const { metrics } = setup({
        a: text(LLAMA(10)),
        b: text(
          `${LLAMA(20)}# HELP plain_total A plain one.\n# TYPE plain_total counter\nplain_total{model="x"} 1\n`,
        ),
      });
      const scrape = await metrics.text();
      const dir = mkdtempSync(join(tmpdir(), "qm-metrics-"));
      try {
        const file = join(dir, "scrape.txt");
        writeFileSync(file, scrape);
        const p = Bun.spawnSync(["sh", "-c", `promtool check metrics < ${file} 2>&1`]);
        const complaints = p.stdout.toString().split("\n").filter(Boolean);
        // Exit 3 is "linted with problems", 1 a text promtool cannot parse.
        expect(p.exitCode === 0 || p.exitCode === 3).toBe(true);
        expect(complaints.filter((l) => !colonLint(l))).toEqual([]);
        // The engine's three, and the model server protocol's four (qm's own vLLM names).
        expect(complaints.length).toBe(3 + 4);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
