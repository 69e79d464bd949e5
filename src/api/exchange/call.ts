/**
 * One request for a model, from its grant to its end, whichever API it came in on: its deadline
 * (time limits, the client leaving, shutdown's cut — see `Deadline`), the lease, the observer
 * on the answer, and the one end that releases the lease. The object itself is what the proxy
 * is handed (`UpstreamCall`) and what the deadline reports to, so a request builds no closures
 * for them.
 */
import type { ModelConfig, PeerTarget } from "../../config/types.ts";
import type { ApiKey } from "../../keys/api-key.ts";
import { KeyTable } from "../../keys/table.ts";
import type { Capture } from "../../observe/capture.ts";
import type { ApiName, RequestRecord } from "../../observe/record.ts";
import { peerCredentials, peerRequestHeaders } from "../../peers/target.ts";
import type { AnswerNames } from "../../proxy/answer-names.ts";
import { failureLogLine, upstreamFailure } from "../../proxy/causes.ts";
import { Deadline, type DeadlineReport } from "../../proxy/deadline.ts";
import type { UpstreamCall } from "../../proxy/forward.ts";
import type { RelayEnd } from "../../proxy/relay.ts";
import { QmError } from "../../shared/errors.ts";
import type { Fetch } from "../../shared/fetch.ts";
import type { Logger } from "../../shared/log.ts";
import { keyOf } from "../edge/caller.ts";
import type { InferenceGateway, Lease } from "../gateway.ts";
import { Observer } from "./observer.ts";

export interface CallOptions {
  /**
   * The answer may legitimately go quiet for long (a model's own web UI or event stream fetched
   * through `/upstream/…`): only the first-byte limit applies, and its silences are never
   * counted as a stalling model.
   */
  mayIdle?: boolean | undefined;
  observer?: Observer | null | undefined;
  /** The API the request came in on, for its record (`openai` if absent). */
  api?: { readonly name: ApiName } | undefined;
  /** The client's request and the body read from it, for a capture. */
  request?: Request | undefined;
  body?: Uint8Array | null | undefined;
}

export class Call implements UpstreamCall, DeadlineReport {
  readonly modelId: string;
  readonly deadline: Deadline;
  /** The tee on the answer; every call has one (it reads the record's usage and finish reason). */
  readonly observer: Observer;
  private lease: Lease | null = null;
  /** The granted model's base URL: the config it started with (its port may have moved). */
  base = "";
  /** The model was ready when the request came (`x-qm-model-loaded`). */
  loaded = false;
  /** How long the grant took (`x-qm-wait-ms`); -1 until granted. */
  waitedMs = -1;
  private over = false;
  private readonly api: ApiName;
  /** Wall-clock arrival (the record's `time`) and the same moment on the call's clock. */
  private readonly arrived = Date.now();
  private readonly startedAt: number;
  private endedAt = 0;
  private answeredInFull = false;
  /** The client's HTTP status, once its response is made; 0 before. */
  private status = 0;
  private streamed = false;
  /** What is captured of the request and its answer (`[activity] capture`); null when off. */
  readonly capture: Capture | null = null;
  /** The peer the call went to (`viaPeer`), or null for a local model. */
  peer: PeerTarget | null = null;
  /** The peer's key, added upstream by the proxy (`UpstreamCall.credentials`). */
  credentials: [string, string][] | undefined;
  /** How the upstream is called: the gateway's fetch. */
  readonly fetch: Fetch | undefined;
  /** What each model's server answers with as its name (`AnswerNames`). */
  readonly answerNames: AnswerNames | undefined;
  /** The key the request came with (its record's `key`; its tokens count against its limit). */
  readonly key: ApiKey;

  constructor(
    private readonly gw: InferenceGateway,
    readonly model: ModelConfig,
    client: AbortSignal,
    readonly log: Logger,
    opts: CallOptions = {},
  ) {
    this.modelId = model.id;
    this.fetch = gw.fetch;
    this.answerNames = gw.answerNames;
    this.observer = opts.observer ?? new Observer(null);
    this.key = keyOf(opts.request);
    // Nobody reads the record, and no token limit counts the answer: its figures are never
    // looked for.
    if (!gw.recording && this.key.tokensPerMin <= 0) this.observer.ignoreUsage();
    const store = gw.captures;
    if (store !== null && opts.request) this.capture = store.begin(opts.request, opts.body);
    this.api = opts.api?.name ?? "openai";
    this.deadline = Deadline.forModel(model, {
      report: opts.mayIdle ? undefined : this,
      sweep: gw.calls,
      client,
      mayIdle: opts.mayIdle,
    });
    this.signal = this.deadline.signal;
    this.startedAt = this.deadline.now();
    // A managed node's model is served by the node, with the node's key.
    if (model.node) this.credentials = peerCredentials(model.node.apiKey);
  }

  /** Aborts when the client leaves, a time limit passes or shutdown cuts the call. */
  readonly signal: AbortSignal;

  /** The model was granted: from now on `finish` releases it. */
  granted(lease: Lease): void {
    this.base = lease.model.proxy;
    this.waitedMs = lease.waitedMs;
    if (this.over) lease.release();
    else this.lease = lease;
  }

  /**
   * A peer's model: the call goes to the peer's URL with its key, and no lease is taken (the
   * peer schedules it). `finish` tells the peer table the call is over.
   */
  viaPeer(target: PeerTarget): void {
    this.peer = target;
    this.base = this.model.proxy;
    this.loaded = true;
    this.credentials = peerRequestHeaders(target.apiKey);
  }

  /** The client stopped reading before the answer came (a wait-status stream it cancelled). */
  cancel(): void {
    this.deadline.cancel();
  }

  /**
   * The exchange is over (`answered`: the upstream answered in full). Ends the deadline and
   * releases the lease with how the answer ended. Only the first call counts.
   */
  finish(answered: boolean): void {
    if (this.over) return;
    this.over = true;
    this.endedAt = this.deadline.now();
    this.answeredInFull = answered;
    this.deadline.end(answered);
    this.observer.settle();
    this.lease?.release({ toolCalls: this.observer.toolCalls });
    if (this.peer) this.gw.peers?.end(this.peer.peer);
    if (this.status !== 0) this.report();
  }

  /**
   * The client's response is made (`streamed`: its body is a stream). The record goes out once
   * both this and `finish` happened, whichever comes last: a stream's end comes after its
   * headers, a whole answer's or a failure's before them. Only the first call counts.
   */
  responded(status: number, streamed: boolean): void {
    if (this.status !== 0) return;
    this.status = status;
    this.streamed = streamed;
    if (this.over) this.report();
  }

  private report(): void {
    const f = this.observer.usage;
    if (this.key.tokensPerMin > 0) {
      const tokens = (f.prompt ?? 0) + (f.completion ?? 0);
      KeyTable.of(this.gw.config).limits.spent(this.key.name, tokens, performance.now());
    }
    if (!this.gw.recording) return;
    const first = this.deadline.firstReadAt;
    const record: RequestRecord = {
      id: 0,
      time: this.arrived,
      key: this.key.name,
      model: this.modelId,
      api: this.api,
      status: this.status,
      answered: this.answeredInFull,
      wait_ms: this.waitedMs >= 0 ? this.waitedMs : null,
      swap: !this.loaded,
      duration_ms: tenthMs(this.endedAt - this.startedAt),
      ttft_ms:
        this.streamed && first >= 0 && first <= this.endedAt
          ? tenthMs(first - this.startedAt)
          : null,
      prompt_tokens: f.prompt,
      completion_tokens: f.completion,
      cached_tokens: f.cached,
      finish_reason: f.finishReason,
    };
    const peer = this.peer?.peer ?? this.model.node?.node;
    if (peer !== undefined) record.peer = peer;
    try {
      this.gw.record(record, this.capture);
    } catch (error) {
      // What watches requests must never break one.
      this.log.error(`recording a request of "${this.modelId}": ${String(error)}`);
    }
  }

  /** qm's headers on every answer for a model: which model, whether it was loaded, the wait. */
  tag(headers: Headers): void {
    headers.set("x-qm-model", this.modelId);
    if (this.peer) headers.set("x-qm-peer", this.peer.peer);
    else if (this.model.node) headers.set("x-qm-peer", this.model.node.node);
    headers.set("x-qm-model-loaded", this.loaded ? "true" : "false");
    if (this.waitedMs >= 0) headers.set("x-qm-wait-ms", String(this.waitedMs));
  }

  /** The proxy's report of how the call ended. */
  ended(end: RelayEnd): void {
    this.finish(end.kind === "done");
  }

  /**
   * The whole body of a `raw` upstream answer (its read timed by the deadline), for an API that
   * translates the answer. A timeout fails as itself; any other failure as one plain cause.
   */
  async readText(res: Response): Promise<string> {
    try {
      return await res.text();
    } catch (error) {
      const timeout = this.deadline.timedOut;
      if (timeout) throw timeout;
      this.log.warn(
        `key ${this.key.name}: ${failureLogLine(this.modelId, error, this.stderrTail())}`,
      );
      throw new QmError("upstream_failed", upstreamFailure(this.modelId, error), { cause: error });
    } finally {
      this.deadline.read();
    }
  }

  /** An upstream answer that must be JSON; anything else is the model's failure. */
  parseAnswer(text: string): unknown {
    try {
      return JSON.parse(text);
    } catch {
      throw new QmError("upstream_failed", `model "${this.modelId}" answered with invalid JSON`);
    }
  }

  stderrTail(): string[] {
    return this.gw.stderrTail(this.modelId);
  }

  // A peer's stalls are its own: nothing here restarts it (its breaker sees its failures).
  stalled(): void {
    if (!this.peer) this.gw.reportStall(this.modelId);
  }

  answered(): void {
    if (!this.peer) this.gw.reportAnswered(this.modelId);
  }
}

/** A duration for the record: never negative, to a tenth of a millisecond (the clock's noise). */
function tenthMs(ms: number): number {
  return Math.max(0, Math.round(ms * 10) / 10);
}
