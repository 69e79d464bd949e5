/**
 * Server-sent event frames (WHATWG HTML §9.2), the one writer of every frame qm makes itself:
 * error events of both APIs, Anthropic's translated events, `/api/events`, and the wait-status
 * comments. `data` is one line (JSON.stringify never writes a raw newline), so each frame is a
 * whole event: an `event:` line when named, one `data:` line, and the blank line that ends it.
 */

/** `event: NAME` (when named) and `data: DATA`, ended by a blank line. */
/** The headers of every event stream qm writes itself. */
export const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

export function sseEvent(data: string, event?: string, id?: number): string {
  const head =
    (id === undefined ? "" : `id: ${id}\n`) + (event === undefined ? "" : `event: ${event}\n`);
  return `${head}data: ${data}\n\n`;
}

/** A comment frame (`: TEXT`): every conforming parser drops it, so no client mistakes it for data. */
export function sseComment(text: string): string {
  return `: ${text}\n\n`;
}
