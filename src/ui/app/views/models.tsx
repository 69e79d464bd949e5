/** The Models page: every model's state and figures, with load / unload. */
import { useState } from "preact/hooks";
import { HttpError, post } from "../api.ts";
import { count, duration, gb, ms, NONE, percent, remaining } from "../format.ts";
import { hrefOf, useNow } from "../hooks.ts";
import { type Dash, holdNote, loadElapsed, loadFraction } from "../state.ts";
import type { ModelStatus } from "../wire.ts";
import { Progress, StateBadge, VramBar } from "./bits.tsx";

interface Props {
  dash: Dash;
  /** Something worth reading again now (after a load or unload was asked for). */
  refresh(): void;
}

export function ModelsPage({ dash, refresh }: Props) {
  // Countdowns and load bars tick here only, not the whole app.
  const now = useNow(1000);
  const [pending, setPending] = useState<Record<string, string>>({});
  const [message, setMessage] = useState<{ text: string; error: boolean } | null>(null);
  const status = dash.status;
  if (!status) return <p class="muted">Reading qm's status…</p>;

  const act = async (m: ModelStatus, what: "load" | "unload") => {
    let path = `/api/models/${encodeURIComponent(m.id)}/${what}`;
    if (what === "unload" && m.leases > 0) {
      const ok = confirm(
        `${m.id} holds ${m.leases} lease${m.leases === 1 ? "" : "s"}. Unload it anyway and revoke ${m.leases === 1 ? "it" : "them"}?`,
      );
      if (!ok) return;
      path += "?force=true";
    }
    setPending((p) => ({ ...p, [m.id]: what }));
    setMessage(null);
    try {
      await post(path);
      setMessage({ text: `${m.id}: ${what === "load" ? "loaded" : "unloading"}`, error: false });
    } catch (err) {
      if (err instanceof HttpError && err.status === 409 && !path.includes("force")) {
        // A lease came after the table was drawn: qm names it; ask before revoking.
        if (confirm(`${err.message}\n\nUnload anyway and revoke the leases?`)) {
          try {
            await post(`${path}?force=true`);
          } catch (again) {
            setMessage({ text: `${m.id}: ${String((again as Error).message)}`, error: true });
          }
        }
      } else {
        setMessage({ text: `${m.id}: ${String((err as Error).message)}`, error: true });
      }
    } finally {
      setPending(({ [m.id]: _, ...rest }) => rest);
      refresh();
    }
  };

  return (
    <section aria-label="Models">
      <VramBar status={status} />
      <div class="summary">
        <span>
          queued <b class="num">{status.queue.depth}</b>
        </span>
        {status.swaps.map((s) => (
          <span key={s.target}>
            swapping to <b>{s.target}</b>
            {s.evict.length > 0 && ` (evicting ${s.evict.join(", ")})`}, {s.waiters} waiting
          </span>
        ))}
      </div>
      <output class={message?.error ? "note error" : "note"}>{message?.text ?? ""}</output>
      <div class="table-wrap">
        <table class="models">
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                In flight
              </th>
              <th scope="col" class="num">
                Queued
              </th>
              <th scope="col" class="num">
                Leases
              </th>
              <th scope="col" class="num">
                Hold
              </th>
              <th scope="col" class="num">
                VRAM est.
              </th>
              <th scope="col">Load</th>
              <th scope="col" class="num">
                Idle unload
              </th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {status.models.map((m) => (
              <ModelRow
                key={m.id}
                m={m}
                fraction={loadFraction(dash, m, now)}
                elapsed={loadElapsed(dash, m, now)}
                now={now}
                pending={pending[m.id] ?? null}
                act={act}
              />
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function ModelRow(props: {
  m: ModelStatus;
  fraction: number | null;
  /** How long its load has run, ms (null when not loading). */
  elapsed: number | null;
  now: number;
  pending: string | null;
  act(m: ModelStatus, what: "load" | "unload"): void;
}) {
  const { m, fraction, elapsed, now, pending, act } = props;
  const hold = remaining(m.held_until_ms, now);
  const whyHold = holdNote(m, now);
  const unloadIn = remaining(m.unload_at_ms, now);
  const loaded = m.state === "ready" || m.state === "starting";
  return (
    <tr data-model={m.id} data-state={m.state}>
      <th scope="row">
        <span class="model-id">{m.id}</span>
        <span class="aliases">
          {[
            m.group,
            m.port !== null ? `:${m.port}` : null,
            m.pid !== null ? `pid ${m.pid}` : null,
            m.concurrency_limit > 0 ? `${m.concurrency_limit} at a time` : null,
            ...m.aliases,
          ]
            .filter((x) => x !== null)
            .join(" · ")}
        </span>
        {m.last_error && (
          <span class="row-error" title={m.last_error}>
            {m.last_error}
          </span>
        )}
      </th>
      <td>
        <StateBadge state={m.state} />
      </td>
      <td class="num">{count(m.inflight)}</td>
      <td class="num" data-cell="queued">
        {count(m.queued)}
        {m.queue_positions.length > 0 && (
          <span class="muted" title="places in qm's waiting line (1 = next)">
            {" "}
            (#{m.queue_positions.join(", #")})
          </span>
        )}
      </td>
      <td class="num">{count(m.leases)}</td>
      <td class="num" data-cell="hold">
        {hold === null ? NONE : duration(hold)}
        {whyHold !== null && (
          <span class="hold-why" data-cell="hold-why" title={whyHold}>
            {whyHold}
          </span>
        )}
      </td>
      <td class="num">{m.est_vram_gb > 0 ? gb(m.est_vram_gb) : NONE}</td>
      <td data-cell="load">
        {m.state === "starting" ? (
          <Progress
            value={fraction}
            label={`loading ${m.id}`}
            text={
              fraction === null
                ? `${duration(elapsed ?? 0)} so far${m.load?.stage ? ` · ${m.load.stage}` : ""}`
                : m.load?.stage
                  ? `${percent(fraction)} · ${m.load.stage}`
                  : undefined
            }
          />
        ) : (m.prefetched ?? null) !== null ? (
          <Progress
            value={m.prefetched!}
            label={`files of ${m.id} read ahead of its load`}
            text={`prefetched ${percent(m.prefetched!)}`}
          />
        ) : m.last_load_ms !== null ? (
          <span class="muted num">last {ms(m.last_load_ms)}</span>
        ) : (
          NONE
        )}
      </td>
      <td class="num">
        {m.keep_alive_ms === -1
          ? "never"
          : unloadIn !== null
            ? `in ${duration(unloadIn)}`
            : m.ttl_s > 0
              ? `${duration(m.ttl_s * 1000)} idle`
              : NONE}
      </td>
      <td class="actions">
        <button
          type="button"
          disabled={pending !== null || loaded}
          onClick={() => act(m, "load")}
          aria-label={`Load ${m.id}`}
        >
          {pending === "load" ? "Loading…" : "Load"}
        </button>
        <button
          type="button"
          disabled={pending === "unload" || m.state === "stopped"}
          onClick={() => act(m, "unload")}
          aria-label={`Unload ${m.id}`}
        >
          Unload
        </button>
        <a href={hrefOf("logs", m.id)} aria-label={`Logs of ${m.id}`}>
          Logs
        </a>
        <a href={hrefOf("playground", m.id)} aria-label={`Chat with ${m.id}`}>
          Chat
        </a>
      </td>
    </tr>
  );
}
