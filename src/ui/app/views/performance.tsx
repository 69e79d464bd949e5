/** The Performance page: per-model figures over the recent requests. */
import { count, ms, rate } from "../format.ts";
import { summarize } from "../perf.ts";
import type { RequestRecord } from "../wire.ts";

export function PerformancePage({ requests }: { requests: RequestRecord[] }) {
  const rows = summarize(requests);
  return (
    <section aria-label="Performance">
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
