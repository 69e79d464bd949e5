/** The Performance page: request rate and TTFT per model over time, and per-model figures. */
import { buckets, requestSeries, timesOf, windowStart } from "../charts.ts";
import { count, ms, rate } from "../format.ts";
import { useNow } from "../hooks.ts";
import { quantile, summarize } from "../perf.ts";
import type { RequestRecord } from "../wire.ts";
import { LineChart } from "./line-chart.tsx";

export function PerformancePage({ requests }: { requests: RequestRecord[] }) {
  const rows = summarize(requests);
  const now = useNow(5000);
  // 30 points over the span shown (at most the last 30 minutes): a minute each, or less.
  const from = windowStart(now, timesOf({ memory: [], residency: [], swaps: [] }, requests));
  const bucketMs = (now - from) / 30;
  const starts = buckets(now, bucketMs, now - from);
  const series = requestSeries(requests, starts, bucketMs);
  const models = series.rate.map((s) => s.model);
  const shown = requests.filter((r) => r.api !== "load" && r.time >= from);
  const of = (model: string) => shown.filter((r) => r.model === model);
  const requestsOf = (model: string) => `${of(model).length} req`;
  const ttftOf = (model: string) =>
    `p50 ${ms(
      quantile(
        of(model).flatMap((r) => (r.ttft_ms === null ? [] : [r.ttft_ms])),
        0.5,
      ),
    )}`;
  return (
    <section aria-label="Performance">
      <div class="chart-row">
        <LineChart
          testid="rate-chart"
          label="Requests per minute"
          starts={starts}
          series={series.rate}
          models={models}
          format={(v) => (v < 10 ? v.toFixed(1) : String(Math.round(v)))}
          legend={requestsOf}
          from={from}
          now={now}
        />
        <LineChart
          testid="ttft-chart"
          label="Time to first token (median)"
          starts={starts}
          series={series.ttft}
          models={models}
          format={(v) => ms(v)}
          legend={ttftOf}
          from={from}
          now={now}
        />
      </div>
      <p class="muted">
        Over the last {requests.length} requests this page has seen (TTFT: arrival to first chunk,
        wait included; tok/s: output tokens after the first chunk).
      </p>
      {rows.length === 0 ? (
        <p class="muted">No requests yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col" class="num">
                  Requests
                </th>
                <th scope="col" class="num">
                  Failed
                </th>
                <th scope="col" class="num">
                  Swaps
                </th>
                <th scope="col" class="num">
                  Wait p50
                </th>
                <th scope="col" class="num">
                  TTFT p50
                </th>
                <th scope="col" class="num">
                  TTFT p90
                </th>
                <th scope="col" class="num">
                  tok/s p50
                </th>
                <th scope="col" class="num">
                  Duration p50
                </th>
                <th scope="col" class="num">
                  Tokens in
                </th>
                <th scope="col" class="num">
                  Tokens out
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((p) => (
                <tr key={p.model}>
                  <th scope="row">{p.model}</th>
                  <td class="num">{count(p.requests)}</td>
                  <td class="num">{count(p.failed)}</td>
                  <td class="num">{count(p.swaps)}</td>
                  <td class="num">{ms(p.waitP50)}</td>
                  <td class="num">{ms(p.ttftP50)}</td>
                  <td class="num">{ms(p.ttftP90)}</td>
                  <td class="num">{rate(p.tpsP50)}</td>
                  <td class="num">{ms(p.durationP50)}</td>
                  <td class="num">{count(p.tokensIn)}</td>
                  <td class="num">{count(p.tokensOut)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
