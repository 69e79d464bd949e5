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

/** The longest upstream comment line (`: ` and its text, in UTF-8 bytes) a translated stream relays. */
export const RELAYED_COMMENT_BYTES = 1024;

/**
 * An upstream's SSE comment (its text after the colon and optional space) as the translated
 * streams (Anthropic, Responses) relay it: a `qm-status` comment (a qm peer's wait status)
 * becomes the same comment frame; any other comment (a keep-alive, anything else) and one whose
 * line is over `RELAYED_COMMENT_BYTES` is dropped (""), so an upstream cannot make qm hold or
 * write more than that per line.
 */
export function relayedComment(text: string): string {
  if (!text.startsWith("qm-status")) return "";
  const line = text.length + 2;
  // At most 3 UTF-8 bytes per UTF-16 unit: only a line that could be over is measured.
  if (line > RELAYED_COMMENT_BYTES) return "";
  if (line * 3 > RELAYED_COMMENT_BYTES && Buffer.byteLength(text) + 2 > RELAYED_COMMENT_BYTES) {
    return "";
  }
  return sseComment(text);
}
