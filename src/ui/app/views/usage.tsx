/**
 * The Usage page: per key, what it asked of the models over the last day (requests, tokens, the
 * mean wait for a model, the swaps it caused), and who waits for what right now. An admin key
 * sees every key; another key sees its own (qm answers each as its key may see).
 */
import { useEffect, useState } from "preact/hooks";
import { getJson, HttpError } from "../api.ts";
import { count, ms } from "../format.ts";
import { usageByKey } from "../usage.ts";
import type { Status, UsageRow } from "../wire.ts";

/** The usage is re-read this often while the page is shown. */
const USAGE_POLL_MS = 15_000;
const DAY_MS = 24 * 3600 * 1000;

export function UsagePage({ status }: { status: Status | null }) {
  const [rows, setRows] = useState<UsageRow[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const read = () =>
      getJson<{ usage: UsageRow[] }>(`/api/usage?since=${Date.now() - DAY_MS}`)
        .then((u) => {
          setRows(u.usage);
          setError(null);
        })
        .catch((err) => setError(err instanceof HttpError ? err.message : String(err)));
    void read();
    const t = setInterval(read, USAGE_POLL_MS);
    return () => clearInterval(t);
  }, []);
  const keys = usageByKey(rows ?? []);
  const waiting = status?.waiting ?? [];
  return (
    <section aria-label="Usage">
      <h2>Waiting now</h2>
      {waiting.length === 0 ? (
        <p class="muted">No request is waiting for a model.</p>
      ) : (
        <div class="table-wrap">
          <table aria-label="Waiting now">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Model</th>
                <th scope="col" class="num">
                  Waited
                </th>
                <th scope="col" class="num">
                  Place
                </th>
              </tr>
            </thead>
            <tbody>
              {waiting.map((w, i) => (
                <tr key={i} data-waiting={w.key}>
                  <th scope="row">{w.key}</th>
                  <td>{w.model}</td>
                  <td class="num">{ms(w.waited_ms)}</td>
                  <td class="num">{w.position === null ? "loading" : count(w.position)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h2>Last 24 hours, by key</h2>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {rows !== null && keys.length === 0 ? (
        <p class="muted">No requests in the last 24 hours.</p>
      ) : (
        <div class="table-wrap">
          <table aria-label="Usage by key">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col" class="num">
                  Requests
                </th>
                <th scope="col" class="num">
                  Tokens in
                </th>
                <th scope="col" class="num">
                  Tokens out
                </th>
                <th scope="col" class="num">
                  Mean wait
                </th>
                <th scope="col" class="num">
                  Swaps
                </th>
                <th scope="col">Models</th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.key} data-key={k.key}>
                  <th scope="row">{k.key}</th>
                  <td class="num">{count(k.requests)}</td>
                  <td class="num">{count(k.promptTokens)}</td>
                  <td class="num">{count(k.completionTokens)}</td>
                  <td class="num">{ms(k.meanWaitMs)}</td>
                  <td class="num">{count(k.swaps)}</td>
                  <td>{k.models.join(", ")}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
