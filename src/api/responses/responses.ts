import { forward } from "../../proxy/forward.ts";
import { asQmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import type { OaiChatRequest } from "../anthropic/translate/openai-types.ts";
import type { Call } from "../exchange/call.ts";
import { type Asks, admit, type Exchange, headersOf, runExchange } from "../exchange/exchange.ts";
import { Observer } from "../exchange/observer.ts";
import type { Gateway } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";
import { OPENAI } from "../openai/inference.ts";
import { badRequest, parseJsonObject, readBody } from "../request/body.ts";
import { resolveModel } from "../request/model.ts";
import { filtered } from "../request/params.ts";
import { responseId } from "./translate/ids.ts";
import { toChat } from "./translate/request.ts";
import { fromChat, hasCalls, type OutputItem, type Shape } from "./translate/response.ts";

const encoder = new TextEncoder();

interface Parsed {
  chat: OaiChatRequest;
  shape: Shape;
}

const ECHOED = ["instructions", "metadata", "temperature", "top_p", "max_output_tokens"];

export async function handleResponses(
  gw: Gateway,
  request: Request,
  log: Logger,
): Promise<Response> {
  let asks: Asks;
  let parsed: Parsed;
  let model: Awaited<ReturnType<typeof resolveModel>>;
  try {
    asks = admit(gw, request);
    const body = parseJsonObject(await readBody(request, gw.config.server.maxBodyBytes));
    model = await resolveModel(gw, body.model);
    if (body.stream === true) {
      throw badRequest(
        "stream: true is not served on /v1/responses yet; send stream: false",
        "stream",
      );
    }
    const { chat, dropped } = toChat(body, {
      upstreamModel: model.useModelName || String(body.model),
    });
    if (dropped.length > 0) {
      log.info(`responses: built-in tools left out for model "${model.id}": ${dropped.join(", ")}`);
    }
    const echo: Record<string, unknown> = {};
    for (const k of ECHOED) echo[k] = body[k] ?? null;
    parsed = {
      chat,
      shape: {
        id: responseId(),
        model: String(body.model),
        createdAt: Math.floor(Date.now() / 1000),
        echo,
      },
    };
  } catch (err) {
    return openaiError(asQmError(err));
  }
  return runExchange<Parsed>({
    gw,
    request,
    model,
    asks,
    api: OPENAI,
    log,
    // The translator parses the answer anyway: it tells the observer how it ended.
    observer: new Observer(null),
    parsed,
    send,
  });
}

async function send(x: Exchange<Parsed>, call: Call): Promise<Response> {
  const res = await forward({
    base: call.base,
    pathAndQuery: "/v1/chat/completions",
    method: "POST",
    // A fresh set: no client header means anything to the upstream.
    headers: new Headers({
      "content-type": "application/json",
      accept: "application/json",
      "accept-encoding": "identity",
    }),
    body: encoder.encode(JSON.stringify(filtered(x.model, x.parsed.chat))),
    call,
    raw: true,
  });
  const _id = x.model.id;
  const text = await call.readText(res);
  const headers = headersOf(x);
  call.tag(headers);
  headers.set("content-type", "application/json");
  if (res.status !== 200) {
    // The upstream speaks the OpenAI API: its error envelope is already the client's.
    call.finish(true);
    return new Response(text, { status: res.status, headers });
  }
  const json = call.parseAnswer(text);
  const response = fromChat(json, x.parsed.shape);
  call.observer?.ended(hasCalls(response.output as OutputItem[]));
  call.finish(true);
  return new Response(JSON.stringify(response), { status: 200, headers });
}
