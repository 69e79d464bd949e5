/**
 * Fuzz suite: hostile requests on every route, most over a raw socket (so odd request-targets
 * and broken framing reach qm as written), the rest through `fetch` (streamed, multipart and
 * oversized bodies, custom methods). Two figures:
 *
 * - 5xx: a status ≥ 500 that qm produced itself. The fuzz model is healthy, so nothing but qm
 *   can fail, with two exceptions that are not counted: a 502/503/504/529 for a request that
 *   names the model that cannot start (`z-broken`: qm is right to say it failed), and on
 *   `/upstream/…` a 5xx the demo upstream itself answered (its error message, relayed as-is).
 * - unenveloped: an error (status ≥ 400) whose body is not the API's JSON envelope (an empty
 *   body, text/plain, HTML; a HEAD answer has no body and is exempt), and a connection that
 *   closed or went silent without any response.
 */

import { rawRequest } from "../../tests/support/raw-http.ts";
import { log } from "../bench/util.ts";
import {
  assemble,
  BROKEN_MODEL,
  draft,
  envelopeFor,
  LEASE_MODEL,
  OK_MODEL,
  pickRoute,
  pickWith,
  type Rng,
} from "./fuzz-cases.ts";
import { MUTATIONS } from "./fuzz-mutations.ts";
import { BODY_FRAMING, bodyCutShort, malformedBecause } from "./malformed.ts";
import { configToml, demoCmd, type Qm } from "./qm.ts";
import { type Envelope, enveloped } from "./verdict.ts";

export function fuzzConfig(stateDir: string): string {
  const body = `[groups.fuzz]
members = ${JSON.stringify([OK_MODEL, BROKEN_MODEL, LEASE_MODEL])}
swap = false
exclusive = false

[models.${OK_MODEL}]
cmd = ${JSON.stringify(demoCmd(OK_MODEL, "--tokens 4 --token-ms 0"))}

[models.${LEASE_MODEL}]
cmd = ${JSON.stringify(demoCmd(LEASE_MODEL, "--tokens 4 --token-ms 0"))}

[models.${BROKEN_MODEL}]
cmd = ${JSON.stringify(demoCmd(BROKEN_MODEL, "--crash-at-start"))}
`;
  return configToml({ stateDir, server: "max_body_mb = 1", body });
}

export interface Seen {
  status: number;
  contentType: string;
  body: string;
  /** Closed or silent without a response. */
  none: string | null;
}

export interface Case {
  labels: string[];
  api: Envelope;
  excused: boolean;
  upstream: boolean;
  head: boolean;
  /** The request line names another major HTTP version, well-formed: 505 is the right answer. */
  otherVersion?: boolean;
  /** Why Bun's parser refuses the bytes before qm runs (malformed.ts), or null. */
  malformed?: string | null;
  /** The body stops before its framing ends: qm answers 408 once it has waited for the rest. */
  cutShort?: boolean;
  show: string;
}

interface Cell {
  n: number;
  bad: number;
  example?: string;
}

const bump = (m: Map<string, Cell>, key: string, bad: boolean, example: () => string) => {
  const cell = m.get(key) ?? { n: 0, bad: 0 };
  m.set(key, cell);
  cell.n++;
  if (!bad) return;
  cell.bad++;
  cell.example ??= example();
};

/** What a failing answer looked like, as a class: `400 - empty`, `500 text/html html`, … */
function signature(s: Seen, api: Case["api"]): string {
  if (s.none !== null) return s.none.split(":")[0] as string;
  const type = s.contentType.split(";")[0] || "-";
  const body = s.body.trim();
  const kind =
    body === ""
      ? "empty"
      : body.startsWith("<")
        ? "html"
        : enveloped("json", body, api)
          ? "envelope"
          : enveloped("json", body, "either")
            ? "the other API's envelope"
            : JSON.stringify(body.slice(0, 24));
  return `${s.status} ${type} ${kind}`;
}

export class FuzzTally {
  requests = 0;
  fivexx = 0;
  unenveloped = 0;
  /** Requests Bun's HTTP parser refuses before qm runs (not counted in 5xx or unenveloped). */
  malformed = 0;
  /** Of those, the ones that were answered with success or never answered at all. */
  malformedAccepted = 0;
  /** Per mutation, over the cases with that mutation alone: failures are its own. */
  readonly single = new Map<string, Cell>();
  /** Per class of failing answer (5xx and unenveloped alike). */
  readonly classes = new Map<string, Cell>();
  combos = { n: 0, bad: 0 };

  judge(c: Case, s: Seen): void {
    this.requests++;
    if (c.malformed) {
      // No route, no envelope: what matters is that it is refused, promptly.
      this.malformed++;
      const answered = s.none === null || s.none === "closed without a response";
      const refused =
        s.none === "closed without a response" || (s.none === null && s.status >= 400);
      if (!(c.malformed === BODY_FRAMING ? answered : refused)) {
        this.malformedAccepted++;
        bump(this.classes, `malformed accepted ${signature(s, c.api)}`, true, () =>
          c.show.slice(0, 220),
        );
      }
      return;
    }
    let bad5 = false;
    let badU = false;
    if (s.none !== null) badU = true;
    else {
      if (s.status >= 500) {
        const legit = c.excused && [502, 503, 504, 529].includes(s.status);
        const relayed = c.upstream && /"message"\s*:\s*"demo upstream/.test(s.body);
        const versionRefused = s.status === 505 && c.otherVersion === true;
        bad5 = !legit && !relayed && !versionRefused;
      }
      if (s.status >= 400 && !c.head) badU = !enveloped(s.contentType, s.body, c.api);
    }
    if (bad5) this.fivexx++;
    if (badU) this.unenveloped++;
    const bad = bad5 || badU;
    const what = () =>
      `${c.show.slice(0, 220)} → ${s.none ?? `${s.status} ${s.contentType || "(no type)"} ${JSON.stringify(s.body.slice(0, 120))}`}`;
    if (bad)
      bump(this.classes, `${bad5 ? "5xx" : "unenveloped"} ${signature(s, c.api)}`, true, what);
    if (c.labels.length === 1) bump(this.single, c.labels[0] as string, bad, what);
    else {
      this.combos.n++;
      if (bad) this.combos.bad++;
    }
  }

  report(): void {
    const classes = [...this.classes].sort(([, a], [, b]) => b.n - a.n);
    for (const [sig, c] of classes) log(`fuzz: ${c.n} × ${sig}, e.g. ${c.example}`);
    const rows = [...this.single].sort(([a], [b]) => a.localeCompare(b));
    const failing = rows.filter(([, c]) => c.bad > 0);
    log(
      `fuzz: mutations failing on their own (failed/sent): ${failing.map(([l, c]) => `${l} ${c.bad}/${c.n}`).join(", ")}`,
    );
    for (const [label, c] of failing) log(`fuzz:   ${label} e.g. ${c.example}`);
    const clean = rows.filter(([, c]) => c.bad === 0).map(([l, c]) => `${l} ${c.n}`);
    log(`fuzz: mutations clean on their own (sent): ${clean.join(", ")}`);
    log(`fuzz: cases with 2–3 mutations: ${this.combos.bad}/${this.combos.n} failed`);
  }
}

/** One raw case: a route, then 0–3 mutations (most get exactly one, so failures are theirs). */
function rawCase(r: Rng, port: number): { bytes: string; c: Case } {
  const route = pickRoute(r);
  const d = draft(route, port);
  const roll = r();
  const count = roll < 0.04 ? 0 : roll < 0.8 ? 1 : 2 + Math.floor(r() * 2);
  for (let i = 0; i < count; i++) {
    const [label, mutate] = pickWith(r)(MUTATIONS);
    mutate(d, r, port);
    d.labels.push(label);
  }
  if (count === 0) d.labels.push("valid");
  const bytes = assemble(d);
  const c: Case = {
    labels: [...new Set(d.labels)],
    api: envelopeFor(d.target),
    excused: bytes.includes(BROKEN_MODEL),
    upstream: d.target.toLowerCase().includes("/upstream/"),
    head: d.method === "HEAD",
    otherVersion: /^HTTP\/[02-9]\.\d$/.test(d.version),
    malformed: malformedBecause(bytes),
    cutShort: bodyCutShort(bytes),
    show: JSON.stringify(
      bytes.length > 400 ? `${bytes.slice(0, 300)}…(${bytes.length} bytes)` : bytes,
    ),
  };
  return { bytes, c };
}

export async function rawFuzz(
  qm: Qm,
  t: FuzzTally,
  r: Rng,
  n: number,
  workers: number,
  deadline: number,
) {
  await bounded(n, workers, deadline, async () => {
    const { bytes, c } = rawCase(r, qm.port);
    // A body cut short is waited for (BODY_STALL_MS, 10 s) before its 408.
    const waitMs = c.cutShort ? 15_000 : 5000;
    const res = await rawRequest(qm.port, bytes, { timeoutMs: waitMs, headOnly: c.head });
    const none =
      res.timedOut && res.noResponse
        ? `no response within ${waitMs / 1000} s`
        : res.noResponse
          ? "closed without a response"
          : null;
    t.judge(c, {
      status: res.status,
      contentType: res.headers.get("content-type") ?? "",
      body: res.body,
      none,
    });
  });
}

/** Runs `one` up to `n` times, `workers` at a time, starting none after `deadline`. */
export async function bounded(
  n: number,
  workers: number,
  deadline: number,
  one: () => Promise<void>,
): Promise<void> {
  let issued = 0;
  const worker = async () => {
    while (issued < n && Date.now() < deadline) {
      issued++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
}
