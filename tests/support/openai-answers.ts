/** Scripted answers of an OpenAI-compatible upstream: SSE frames, chunks, completions. */

/** `data: …` frames of a scripted OpenAI stream, `[DONE]` last unless `done` is false. */
export function sseText(chunks: (object | string)[], done = true): string {
  const frames = chunks.map((c) => `data: ${typeof c === "string" ? c : JSON.stringify(c)}\n\n`);
  return frames.join("") + (done ? "data: [DONE]\n\n" : "");
}

export function sseResponse(text: string | ReadableStream<Uint8Array>, status = 200): Response {
  return new Response(text, { status, headers: { "content-type": "text/event-stream" } });
}

/** A chat.completion.chunk with one choice. */
export function chunk(delta: object, finish: string | null = null, extra: object = {}): object {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  };
}

/** A whole chat.completion with one choice. */
export const completion = (message: object, finish: string) =>
  Response.json({
    choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish }],
    usage: { prompt_tokens: 9, completion_tokens: 4 },
  });
