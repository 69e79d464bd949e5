/**
 * How one request ended, judged from the client's side: the error envelopes of both APIs and a
 * bounded reader for answers and streams (OpenAI and Anthropic) that sorts every exchange into
 * one outcome.
 */

export type Api = "openai" | "anthropic";
/** The error envelope a path answers in: an API's, Ollama's, or any ("either"). */
export type Envelope = Api | "ollama" | "either";

function json(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** OpenAI: `{"error":{"message":string,"type":string,…}}`. */
export function openaiEnvelope(text: string): boolean {
  const body = json(text);
  if (!isObject(body) || !isObject(body.error)) return false;
  return typeof body.error.message === "string" && typeof body.error.type === "string";
}

/** Anthropic: `{"type":"error","error":{"type":string,"message":string}}`. */
export function anthropicEnvelope(text: string): boolean {
  const body = json(text);
  if (!isObject(body) || body.type !== "error" || !isObject(body.error)) return false;
  return typeof body.error.type === "string" && typeof body.error.message === "string";
}

/** Ollama: `{"error": string}`. */
export function ollamaEnvelope(text: string): boolean {
  const body = json(text);
  return isObject(body) && typeof body.error === "string";
}

/**
 * An error body in the envelope of `api` ("either" accepts any), served as JSON: an empty
 * body, text/plain or HTML never is one.
 */
export function enveloped(contentType: string, text: string, api: Envelope): boolean {
  if (!/\bjson\b/i.test(contentType)) return false;
  if (api === "openai") return openaiEnvelope(text);
  if (api === "anthropic") return anthropicEnvelope(text);
  if (api === "ollama") return ollamaEnvelope(text);
  return openaiEnvelope(text) || anthropicEnvelope(text) || ollamaEnvelope(text);
}

/**
 * - ok: the whole answer, with the text the demo model generates (and the stream's terminator);
 * - error: an HTTP error in the API's envelope, or a stream that carries an error frame;
 * - cut: the connection failed without either (reset, incomplete chunked body, no response);
 * - truncated: a stream that ended cleanly without terminator or error frame;
 * - wrong: any other answer (an unenveloped error, the wrong text, a bad shape);
 * - hung: nothing settled within the bound;
 * - aborted: the client gave up on purpose (load suite).
 */
export type Kind = "ok" | "error" | "cut" | "truncated" | "wrong" | "hung" | "aborted";

export interface Outcome {
  kind: Kind;
  status: number;
  detail: string;
  /** Content chunks (tokens) seen before the end. */
  tokens: number;
}

export interface Exchange {
  url: string;
  api: Api;
  stream: boolean;
  body: string;
  headers?: Record<string, string>;
  /** The text a complete answer must carry; undefined = any text. */
  expected?: string;
  /** Longest the whole exchange may take before it is "hung". */
  boundMs: number;
  /** Abort on purpose after this many ms … */
  abortAfterMs?: number;
  /** … or after this many content chunks of a stream. */
  abortAfterTokens?: number;
  /** Called once per content chunk (e.g. to inject a fault once a stream is under way). */
  onToken?: (n: number) => void;
}

/** One SSE event's worth of what matters. */
function scanEvent(api: Api, event: string, acc: { text: string; error: boolean; end: boolean }) {
  let name = "";
  let data = "";
  for (const line of event.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data += line.slice(5).trim();
  }
  if (data === "") return false;
  if (api === "openai") {
    if (data === "[DONE]") {
      acc.end = true;
      return false;
    }
    const o = json(data);
    if (isObject(o) && "error" in o) acc.error = true;
    const choice = isObject(o) && Array.isArray(o.choices) ? o.choices[0] : undefined;
    const delta = isObject(choice) ? choice.delta : undefined;
    const piece = isObject(delta) && typeof delta.content === "string" ? delta.content : "";
    acc.text += piece;
    return piece !== "";
  }
  if (name === "error") acc.error = true;
  if (name === "message_stop") acc.end = true;
  const o = json(data);
  const delta = isObject(o) && o.type === "content_block_delta" ? o.delta : undefined;
  const piece = isObject(delta) && typeof delta.text === "string" ? delta.text : "";
  acc.text += piece;
  return piece !== "";
}

function answerText(api: Api, body: unknown): string | null {
  if (!isObject(body)) return null;
  if (api === "openai") {
    const c = Array.isArray(body.choices) ? body.choices[0] : undefined;
    const m = isObject(c) ? c.message : undefined;
    if (isObject(m) && typeof m.content === "string") return m.content;
    return isObject(c) && typeof c.text === "string" ? c.text : null;
  }
  const block = Array.isArray(body.content) ? body.content[0] : undefined;
  return isObject(block) && typeof block.text === "string" ? block.text : null;
}

/** Runs one exchange to its end and says how it ended; never takes longer than `boundMs`. */
export async function exchange(x: Exchange): Promise<Outcome> {
  const ctl = new AbortController();
  let why: "hung" | "aborted" | null = null;
  const stop = (reason: "hung" | "aborted") => {
    why ??= reason;
    ctl.abort();
  };
  const bound = setTimeout(() => stop("hung"), x.boundMs);
  const early =
    x.abortAfterMs === undefined ? null : setTimeout(() => stop("aborted"), x.abortAfterMs);
  let status = 0;
  let tokens = 0;
  const out = (kind: Kind, detail: string): Outcome => ({ kind, status, detail, tokens });
  const acc = { text: "", error: false, end: false };
  try {
    const headers: Record<string, string> = { "content-type": "application/json", ...x.headers };
    if (x.api === "anthropic") headers["anthropic-version"] = "2023-06-01";
    const res = await fetch(x.url, { method: "POST", headers, body: x.body, signal: ctl.signal });
    status = res.status;
    const type = res.headers.get("content-type") ?? "";
    if (status >= 400) {
      const text = await res.text();
      return enveloped(type, text, x.api)
        ? out("error", text.slice(0, 200))
        : out("wrong", `unenveloped ${status} ${type}: ${text.slice(0, 200)}`);
    }
    if (status !== 200) return out("wrong", `HTTP ${status}`);
    if (!x.stream || !type.includes("text/event-stream")) {
      if (x.stream) return out("wrong", `stream asked, got ${type}`);
      const text = await res.text();
      const got = answerText(x.api, json(text));
      if (got === null) return out("wrong", `no answer text: ${text.slice(0, 200)}`);
      if (x.expected !== undefined && got !== x.expected) return out("wrong", `text ${got}`);
      return out("ok", "");
    }
    const decoder = new TextDecoder();
    let pending = "";
    if (!res.body) return out("truncated", "no body");
    for await (const bytes of res.body) {
      pending += decoder.decode(bytes, { stream: true }).replaceAll("\r\n", "\n");
      for (let cut = pending.indexOf("\n\n"); cut >= 0; cut = pending.indexOf("\n\n")) {
        const event = pending.slice(0, cut);
        pending = pending.slice(cut + 2);
        if (!scanEvent(x.api, event, acc)) continue;
        tokens++;
        x.onToken?.(tokens);
        if (x.abortAfterTokens !== undefined && tokens >= x.abortAfterTokens) stop("aborted");
      }
    }
    if (acc.error) return out("error", "error frame");
    if (!acc.end) return out("truncated", `clean end after ${tokens} tokens, no terminator`);
    if (x.expected !== undefined && acc.text !== x.expected)
      return out("wrong", `text ${acc.text}`);
    return out("ok", "");
  } catch (err) {
    if (why === "aborted") return out(why, "aborted by the client");
    // An SDK raises on the error frame itself, whatever follows it.
    if (acc.error) return out("error", "error frame, then the connection failed");
    if (why === "hung") return out(why, `hung (${status ? `HTTP ${status}` : "no response"})`);
    return out("cut", `${status ? `HTTP ${status}, then ` : ""}${(err as Error).message}`);
  } finally {
    clearTimeout(bound);
    if (early) clearTimeout(early);
  }
}

/** A request body both APIs take (OpenAI chat and Anthropic messages alike). */
export function chatBody(model: string, stream: boolean, maxTokens: number): string {
  const messages = [{ role: "user", content: "hi" }];
  return JSON.stringify({ model, stream, max_tokens: maxTokens, messages });
}

export function apiPath(api: Api): string {
  return api === "openai" ? "/v1/chat/completions" : "/v1/messages";
}
