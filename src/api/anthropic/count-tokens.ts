/**
 * `POST /v1/messages/count_tokens` → `{"input_tokens": N}` (docs/translation.md §3.9). Exact when the
 * upstream can count — its native count_tokens for `anthropic_native` models, else its chat
 * template and tokenizer (`upstream.ts`) — otherwise a documented estimate. Never a 5xx: a
 * count is advisory, and Claude Code treats a failure as worse than a rough number.
 *
 * A count never loads, queues or leases a model: asking a model that is not running would
 * start it (and evict another) for a number an estimate gives, and a lease would end the
 * agent-loop hold of a model between two tool calls. So only a model already `ready` is asked,
 * directly; if it goes away meanwhile, the estimate answers.
 */
import { asQmError, QmError } from "../../shared/errors.ts";
import { realTimers, type Timers } from "../../shared/timer.ts";
import { profileOf } from "../chat/profile.ts";
import type { AnthropicRequest } from "./context.ts";
import { anthropicError } from "./errors.ts";
import { requestId } from "./ids.ts";
import { readRequest } from "./request-body.ts";
import { estimatePrompt } from "./translate/estimate.ts";
import { translatePrompt } from "./translate/request.ts";
import { countPromptTokens, DEADLINE_MS, withDeadline } from "./upstream.ts";
import { type CountTokensRequest, CountTokensRequestSchema } from "./wire.ts";

export async function handleCountTokens(ctx: AnthropicRequest): Promise<Response> {
  const { gw, request } = ctx;
  const headers = new Headers({ "request-id": requestId() });
  try {
    if (gw.shuttingDown) throw new QmError("shutting_down", "qm is shutting down");
    const { model, body } = await readRequest<CountTokensRequest>(
      gw,
      request,
      CountTokensRequestSchema,
    );
    const profile = profileOf(model);
    const prompt = translatePrompt(body, profile);
    headers.set("x-qm-model", model.id);
    const answer = (n: number, how: "upstream" | "estimate") => {
      headers.set("x-qm-token-count", how);
      return Response.json({ input_tokens: n }, { headers });
    };
    if (gw.modelState(model.id) !== "ready") return answer(estimatePrompt(prompt), "estimate");
    const signal = request.signal;
    const timers = ctx.opts.timers ?? realTimers;
    const counted = model.anthropicNative
      ? await nativeCount(model.proxy, request.url, body, model.useModelName, signal, timers)
      : await countPromptTokens(model, profile, prompt, signal, timers).catch(() => null);
    return counted === null
      ? answer(estimatePrompt(prompt), "estimate")
      : answer(counted, "upstream");
  } catch (err) {
    const e = asQmError(err);
    // Client errors stay errors; anything of qm's or the upstream's own becomes an estimate
    // above, so what is left here is a 4xx (bad body, unknown model, too large) or shutdown.
    return anthropicError(e, headers);
  }
}

async function nativeCount(
  base: string,
  url: string,
  body: CountTokensRequest,
  useModelName: string,
  signal: AbortSignal,
  timers: Timers,
): Promise<number | null> {
  const q = url.indexOf("?");
  try {
    return await withDeadline(signal, DEADLINE_MS, timers, async (deadline) => {
      const res = await fetch(`${base}/v1/messages/count_tokens${q >= 0 ? url.slice(q) : ""}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(useModelName ? { ...body, model: useModelName } : body),
        signal: deadline,
        proxy: false,
      } as RequestInit);
      const json = (await res.json()) as { input_tokens?: unknown };
      return res.ok && typeof json.input_tokens === "number" ? json.input_tokens : null;
    });
  } catch {
    return null;
  }
}
