/**
 * `POST /v1/responses` end to end, on the one exchange (`../exchange/`): read and translate the
 * request, acquire the model (a cold streaming request waits behind the wait-status
 * placeholder, like chat), send the chat request upstream, translate the answer back — whole,
 * or event by event (`translate/stream.ts` in `api/chat`'s translated body) — and end the call with whether the answer called
 * functions (the agent-loop hold).
 */

import { asQmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import type { Timers } from "../../shared/timer.ts";
import { readRefusal } from "../chat/refusal.ts";
import { sendChat, streamFor } from "../chat/send.ts";
import type { OaiChatRequest, OaiMessage } from "../chat/wire.ts";
import { keyOf } from "../edge/caller.ts";
import type { Call } from "../exchange/call.ts";
import { earlyStream } from "../exchange/early-stream.ts";
import {
  admit,
  type Exchange,
  headersOf,
  runExchange,
  type SchedulingOptions,
} from "../exchange/exchange.ts";
import { Observer } from "../exchange/observer.ts";
import type { Gateway } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";
import { parseJsonObject, readBody } from "../request/body.ts";
import { resolveModel } from "../request/model.ts";
import { filtered } from "../request/params.ts";
import { RESPONSES_API, upstreamRefusal } from "./errors.ts";
import { nativeExchange } from "./native.ts";
import { type Asker, type ResponseStore, storeOf } from "./store.ts";
import { itemId, responseId } from "./translate/ids.ts";
import { inputItems, toMessages } from "./translate/input.ts";
import { checkRequest, toChat } from "./translate/request.ts";
import { fromChat, hasCalls, type OutputItem, type Shape } from "./translate/response.ts";
import { ResponsesStream } from "./translate/stream.ts";
import type { ResponsesRequest } from "./wire.ts";

export interface ResponsesOptions {
  /**
   * Keep-alive period of streams, and how long a stream waits for the upstream's headers
   * before it commits to `200` (so a quick refusal stays an HTTP error).
   */
  pingMs: number;
  log: Logger;
  /** The clock of the keep-alive timer and of that wait; a fake one in tests. */
  timers?: Timers | undefined;
}

/** What a kept response needs besides its final object. */
interface Keep {
  store: ResponseStore;
  /** The name of the key that asked: the kept answer is its own. */
  owner: string;
  history: OaiMessage[];
  turn: OaiMessage[];
  inputItems: Record<string, unknown>[];
}

interface Parsed {
  chat: OaiChatRequest;
  shape: Shape;
  opts: ResponsesOptions;
  /** Null when the answer is not kept (`store: false`, or a store of size 0). */
  keep: Keep | null;
}

const ECHOED = [
  "instructions",
  "metadata",
  "temperature",
  "top_p",
  "max_output_tokens",
  "previous_response_id",
];

/**
 * The conversation `previous_response_id` continues (the asking key's, or any for an admin),
 * and whether to keep this answer.
 */
function continuation(body: ResponsesRequest, store: ResponseStore, asker: Asker) {
  const prev = body.previous_response_id;
  let history: OaiMessage[] = [];
  if (typeof prev === "string") {
    const kept = store.get(prev, asker);
    if (!kept) throw store.missing(prev, asker, "previous_response_id");
    history = kept.conversation;
  }
  return { history, store: body.store !== false };
}

/** Keeps the answer, and the conversation it ends, when the request asked to. */
function keepAnswer(k: Keep | null, response: Record<string, unknown>): void {
  if (!k) return;
  const output = Array.isArray(response.output) ? response.output : [];
  let said: OaiMessage[] = [];
  try {
    said = toMessages(output, undefined);
  } catch {
    // An output qm made always reads back; nothing to keep otherwise.
  }
  k.store.put(String(response.id), {
    owner: k.owner,
    response,
    conversation: [...k.history, ...k.turn, ...said],
    inputItems: k.inputItems,
  });
}

export async function handleResponses(
  gw: Gateway,
  request: Request,
  opts: ResponsesOptions,
): Promise<Response> {
  const { log } = opts;
  let scheduling: SchedulingOptions;
  let parsed: Parsed;
  let model: Awaited<ReturnType<typeof resolveModel>>;
  let bytes: Uint8Array;
  let json: Record<string, unknown>;
  try {
    scheduling = admit(gw, request);
    bytes = await readBody(request, gw.config.server.maxBodyBytes);
    const body = parseJsonObject(bytes);
    json = body;
    model = await resolveModel(gw, body.model, request);
    if (model.responsesNative) {
      return runExchange(nativeExchange(request, gw, model, scheduling, log, bytes, body));
    }
    const store = storeOf(gw);
    const asker = keyOf(request);
    const { history, store: wanted } = continuation(checkRequest(body), store, asker);
    const { chat, dropped, turn, namespaces } = toChat(body, {
      upstreamModel: model.useModelName || String(body.model),
      history,
    });
    if (dropped.length > 0) {
      log.info(`responses: built-in tools left out for model "${model.id}": ${dropped.join(", ")}`);
    }
    const echo: Record<string, unknown> = {};
    for (const k of ECHOED) echo[k] = body[k] ?? null;
    echo.store = wanted;
    const keep =
      wanted && store.maxEntries > 0
        ? {
            store,
            owner: asker.name,
            history,
            turn,
            inputItems: inputItems(body.input, () => itemId("msg")),
          }
        : null;
    parsed = {
      keep,
      chat,
      shape: {
        id: responseId(),
        model: String(body.model),
        createdAt: Math.floor(Date.now() / 1000),
        echo,
        namespaces,
      },
      opts,
    };
  } catch (err) {
    return openaiError(asQmError(err));
  }
  return runExchange<Parsed>({
    gw,
    request,
    model,
    scheduling,
    api: RESPONSES_API,
    log,
    placeholder: parsed.chat.stream === true,
    // The translator parses the answer anyway: it tells the observer how it ended.
    observer: new Observer(null),
    offersTools: Array.isArray(json.tools) && json.tools.length > 0,
    body: bytes,
    json,
    parsed,
    send,
  });
}

function open(x: Exchange<Parsed>, call: Call): Promise<Response> {
  const { chat } = x.parsed;
  return sendChat(call, "/v1/chat/completions", filtered(x.model, chat), chat.stream === true);
}

function send(x: Exchange<Parsed>, call: Call): Promise<Response> {
  call.tag(headersOf(x));
  return x.parsed.chat.stream ? sendStream(x, call) : sendWhole(x, call);
}

async function sendWhole(x: Exchange<Parsed>, call: Call): Promise<Response> {
  const res = await open(x, call);
  const text = await call.readText(res);
  const headers = headersOf(x);
  if (res.status !== 200) {
    call.finish(true);
    return upstreamRefusal(readRefusal(res.status, text), x.model.id, headers);
  }
  headers.set("content-type", "application/json");
  const json = call.parseAnswer(text);
  call.observer.usage.readAnswer(json);
  const response = fromChat(json, x.parsed.shape);
  keepAnswer(x.parsed.keep, response);
  call.observer?.ended(hasCalls(response.output as OutputItem[]));
  call.finish(true);
  return new Response(JSON.stringify(response), { status: 200, headers });
}

function sendStream(x: Exchange<Parsed>, call: Call): Promise<Response> {
  const { opts, shape, keep } = x.parsed;
  return earlyStream(x, call, {
    open: () => open(x, call),
    pingMs: opts.pingMs,
    timers: opts.timers,
    body: (upstream) => {
      const translator = new ResponsesStream(shape);
      return streamFor(call, translator, upstream, {
        pingMs: opts.pingMs,
        timers: opts.timers,
        onEnd: () => {
          if (translator.final) keepAnswer(keep, translator.final);
        },
      });
    },
    // In OpenAI's envelope, with the upstream's status.
    refusal: (res, text, headers) =>
      upstreamRefusal(readRefusal(res.status, text), x.model.id, headers),
  });
}
