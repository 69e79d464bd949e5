/**
 * The wait-status comments qm sends on a stream whose model is not ready (docs/api.md, "The
 * wait-status stream"): `: qm-status: waiting N`, `: qm-status: loading`,
 * `: qm-status: loading 42% eta 7s`, `: qm-status: loading 12s`, `: qm-status: loading 42%`
 * (no load measured before, but the model's log shows how far it is), each maybe ending in the
 * stage the log shows, `(loading tensors)` (src/proxy/wait-status.ts). An SSE parser hands over a
 * comment's text after the colon (WHATWG HTML §9.2.6), with or without the space after it. Pure.
 */
export type WaitStatus =
  | { kind: "waiting"; position: number }
  | {
      kind: "loading";
      percent: number | null;
      etaS: number | null;
      elapsedS: number | null;
      /** The stage the model's log shows (llama-server's), or null. */
      stage: string | null;
    };

const WAITING = /^qm-status: waiting (\d+)$/;
const LOADING = /^qm-status: loading(?: (\d+)%(?: eta (\d+)s)?| (\d+)s)?(?: \(([^()]+)\))?$/;

/** The status a comment states, or null for any other comment (keep-alives, remarks). */
export function parseWaitStatus(comment: string): WaitStatus | null {
  const text = comment.trim();
  const w = WAITING.exec(text);
  if (w) return { kind: "waiting", position: Number(w[1]) };
  const l = LOADING.exec(text);
  if (!l) return null;
  return {
    kind: "loading",
    percent: l[1] === undefined ? null : Number(l[1]),
    etaS: l[2] === undefined ? null : Number(l[2]),
    elapsedS: l[3] === undefined ? null : Number(l[3]),
    stage: l[4] ?? null,
  };
}

/** The line the playground shows for it. */
export function describeWait(s: WaitStatus): string {
  if (s.kind === "waiting") return `waiting its turn (#${s.position})`;
  const stage = s.stage ? ` · ${s.stage}` : "";
  if (s.percent !== null) {
    return `loading ${s.percent}%${s.etaS !== null ? ` · eta ${s.etaS}s` : ""}${stage}`;
  }
  if (s.elapsedS !== null) return `loading · ${s.elapsedS}s so far${stage}`;
  return `loading the model…${stage}`;
}
