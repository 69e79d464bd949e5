/** The Activity page: the latest finished requests, newest first, live. */
import { useState } from "preact/hooks";
import { clock, count, ms, NONE, rate, tokensPerSecond } from "../format.ts";
import type { RequestRecord } from "../wire.ts";

/** Rows drawn at most (the page keeps more for the Performance figures). */
const SHOWN = 200;

export function ActivityPage({ requests }: { requests: RequestRecord[] }) {
  const [model, setModel] = useState("");
  const models = [...new Set(requests.map((r) => r.model))].sort();
  const rows = (model ? requests.filter((r) => r.model === model) : requests).slice(0, SHOWN);
  return (
    <section aria-label="Activity">
      <div class="toolbar">
        <label>
          Model{" "}
          <select value={model} onChange={(e) => setModel(e.currentTarget.value)}>
            <option value="">all</option>
            {models.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
        <span class="muted">
          {rows.length} of {requests.length} requests
        </span>
      </div>
      {rows.length === 0 ? (
        <p class="muted">No finished requests yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="activity">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Model</th>
                <th scope="col">API</th>
                <th scope="col" class="num">
                  Status
                </th>
                <th scope="col" class="num">
                  Wait
                </th>
                <th scope="col" class="num">
                  TTFT
                </th>
                <th scope="col" class="num">
                  Duration
                </th>
                <th scope="col" class="num">
                  In
                </th>
                <th scope="col" class="num">
                  Out
                </th>
                <th scope="col" class="num">
                  tok/s
                </th>
                <th scope="col">Finish</th>
                <th scope="col">Swap</th>
                <th scope="col">Key</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r, i) => (
                <tr key={`${r.time}-${r.model}-${i}`} class={failed(r) ? "failed" : ""}>
                  <td class="num">{clock(r.time)}</td>
                  <td>{r.model}</td>
                  <td>{r.api}</td>
                  <td class="num">
                    {r.status}
                    {failed(r) && r.status < 400 && <abbr title="not answered in full"> ✗</abbr>}
                  </td>
                  <td class="num">{ms(r.wait_ms)}</td>
                  <td class="num">{ms(r.ttft_ms)}</td>
                  <td class="num">{ms(r.duration_ms)}</td>
                  <td class="num">{count(r.prompt_tokens)}</td>
                  <td class="num">{count(r.completion_tokens)}</td>
                  <td class="num">{rate(tokensPerSecond(r))}</td>
                  <td>{r.finish_reason ?? NONE}</td>
                  <td>{r.swap ? "yes" : ""}</td>
                  <td>{r.key ?? NONE}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** An error status, or an answer cut short (a load has no answer to cut). */
function failed(r: RequestRecord): boolean {
  return r.status >= 400 || (!r.answered && r.api !== "load");
}
