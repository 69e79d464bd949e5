/**
 * The fuzz suite's `fetch` half: bodies a raw socket makes tedious — streamed (chunked)
 * uploads, multipart forms, blobs, oversized JSON — custom methods and the scheduling headers
 * with out-of-range values. Judged by the same rules as the raw half (fuzz.ts).
 */

import { bounded, type Case, type FuzzTally, type Seen } from "./fuzz.ts";
import {
  BROKEN_MODEL,
  envelopeFor,
  LEASE_MODEL,
  OK_MODEL,
  pickWith,
  type Rng,
} from "./fuzz-cases.ts";
import type { Qm } from "./qm.ts";

/** A request to send; `names` is what it says about the model (for the z-broken excuse). */
type FetchCase = [
  string,
  (r: Rng, url: string) => { path: string; init: RequestInit; names?: string },
];

const chatJson = (model = OK_MODEL, extra = {}) =>
  JSON.stringify({ model, max_tokens: 4, messages: [{ role: "user", content: "hi" }], ...extra });

/** Bodies `fetch` can send that a raw socket makes tedious: streams, forms, blobs. */
const FETCH_CASES: FetchCase[] = [
  [
    "fetch:stream-body",
    (r) => {
      const text = pickWith(r)([
        chatJson(),
        chatJson(OK_MODEL, { stream: true }),
        "{",
        chatJson(BROKEN_MODEL),
      ]);
      const cut = Math.floor(r() * text.length);
      const parts = [text.slice(0, cut), text.slice(cut)];
      const body = new ReadableStream({
        async pull(ctl) {
          const next = parts.shift();
          if (next === undefined) ctl.close();
          else ctl.enqueue(new TextEncoder().encode(next));
        },
      });
      const path = pickWith(r)([
        "/v1/chat/completions",
        "/v1/messages",
        `/upstream/${OK_MODEL}/v1/chat/completions`,
      ]);
      return {
        path,
        names: text,
        init: {
          method: "POST",
          body,
          headers: { "content-type": "application/json" },
          duplex: "half",
        } as RequestInit,
      };
    },
  ],
  [
    "fetch:formdata",
    (r) => {
      const form = new FormData();
      const model = pickWith(r)([OK_MODEL, BROKEN_MODEL, "", null, "nope"]);
      if (model !== null) form.set("model", model);
      if (r() < 0.5) form.set("file", new Blob([new Uint8Array([0, 1, 2, 255])]), "a.wav");
      if (r() < 0.3) form.set("stream", "true");
      const path = pickWith(r)([
        "/v1/audio/transcriptions",
        "/v1/chat/completions",
        "/v1/messages",
        `/api/models/${LEASE_MODEL}/lease`,
        "/v1/embeddings",
      ]);
      return { path, init: { method: "POST", body: form } };
    },
  ],
  [
    "fetch:urlencoded",
    (r) => ({
      path: pickWith(r)([
        "/v1/chat/completions",
        "/v1/messages",
        `/api/models/${LEASE_MODEL}/lease`,
      ]),
      init: { method: "POST", body: new URLSearchParams({ model: OK_MODEL, stream: "true" }) },
    }),
  ],
  [
    "fetch:blob-type",
    (r) => ({
      path: pickWith(r)(["/v1/chat/completions", "/v1/messages/count_tokens", "/v1/embeddings"]),
      init: {
        method: "POST",
        body: new Blob([chatJson()], {
          type: pickWith(r)(["image/png", "text/html", "application/octet-stream"]),
        }),
      },
    }),
  ],
  [
    "fetch:huge",
    (r) => ({
      path: pickWith(r)([
        "/v1/chat/completions",
        "/v1/messages",
        `/upstream/${OK_MODEL}/v1/chat/completions`,
        `/api/models/${LEASE_MODEL}/lease`,
      ]),
      init: {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: chatJson(OK_MODEL, { pad: "a".repeat(pickWith(r)([1_200_000, 2_500_000])) }),
      },
    }),
  ],
  [
    "fetch:method",
    (r) => ({
      path: pickWith(r)([
        "/v1/chat/completions",
        "/v1/messages",
        "/api/status",
        "/health",
        "/upstream/z-ok/health",
        "/api/models/z-ok/load",
        "/nope",
      ]),
      init: {
        method: pickWith(r)(["FOO", "PROPFIND", "PURGE", "PUT", "PATCH", "DELETE", "OPTIONS"]),
        // Bun's fetch refuses a body on a method it does not know (it sends those as GET).
        headers: { "content-type": "application/json" },
      },
    }),
  ],
  [
    "fetch:hold",
    (r) => ({
      path: pickWith(r)(["/v1/chat/completions", "/v1/messages"]),
      init: {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-qm-hold-ms": pickWith(r)(["99999999999", "2147483648", "-1", "1e21"]),
          "x-qm-patience-ms": pickWith(r)(["99999999999", "0", "x"]),
        },
        body: chatJson(OK_MODEL, { stream: r() < 0.5 }),
      },
    }),
  ],
  [
    "fetch:valid",
    (r) => {
      const path = pickWith(r)([
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/messages/count_tokens",
        "/v1/completions",
        "/v1/embeddings",
      ]);
      return {
        path,
        init: {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: chatJson(OK_MODEL, { prompt: "hi", input: "hi" }),
        },
      };
    },
  ],
];

export async function fetchFuzz(
  qm: Qm,
  t: FuzzTally,
  r: Rng,
  n: number,
  workers: number,
  deadline: number,
) {
  await bounded(n, workers, deadline, async () => {
    const [label, make] = pickWith(r)(FETCH_CASES);
    const { path, init, names } = make(r, qm.url);
    const method = init.method ?? "GET";
    const c: Case = {
      labels: [label],
      api: envelopeFor(path),
      excused:
        (names ?? String(init.body ?? "")).includes(BROKEN_MODEL) ||
        (init.body instanceof FormData && init.body.get("model") === BROKEN_MODEL),
      upstream: path.startsWith("/upstream/"),
      head: method === "HEAD",
      show: `${method} ${path}`,
    };
    const seen: Seen = { status: 0, contentType: "", body: "", none: null };
    try {
      const res = await fetch(qm.url + path, { ...init, signal: AbortSignal.timeout(6000) });
      seen.status = res.status;
      seen.contentType = res.headers.get("content-type") ?? "";
      if (res.status >= 400) seen.body = await res.text();
      else await res.body?.cancel();
    } catch (err) {
      if (seen.status === 0) seen.none = `no response: ${(err as Error).message}`;
    }
    t.judge(c, seen);
  });
}
