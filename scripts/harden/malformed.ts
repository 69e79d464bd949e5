/**
 * Requests that are not HTTP/1.1 messages Bun's parser accepts. Bun refuses them before any of
 * qm's code runs: a bare 400/431/505, or a closed connection. No route has been chosen, so no
 * API envelope applies. Judged from the bytes the suite built, never from the answer, so that
 * a bug of qm's can never hide here. What is refused:
 * - a method Bun does not know (RFC 9110 §9 lets a server answer 501; Bun closes);
 * - a request line with a version other than HTTP/1.0 or HTTP/1.1, or a target that is
 *   neither origin-form (starting with `/`) nor absolute-form, or that contains a space, tab
 *   or control byte (RFC 9112 §3) other than DEL: Bun 1.4.5's parser takes a DEL (0x7f) in the
 *   target and hands the request on, so such a request is qm's to answer and is judged like
 *   any other (no 5xx, every error enveloped);
 * - a header line without a colon, an obs-fold, or a control byte in a field (RFC 9112 §5,
 *   RFC 9110 §5.5);
 * - framing RFC 9112 §6 rejects: a Content-Length that is not one decimal number,
 *   Transfer-Encoding other than `chunked`, both headers at once, or a chunked body whose
 *   chunk sizes are not hex numbers (RFC 9112 §7.1);
 * - a chunked body with a trailer section (RFC 9112 §7.1.2 allows one): Bun 1.4.5's parser ends
 *   the body at the last chunk and reads the trailer as the next request on the connection,
 *   answering that 400 — before qm's answer when qm's route is still working — so the client may
 *   read a bare 400 for its request (counted as body framing: any prompt answer is fine);
 * - an HTTP/1.1 request without a Host header (RFC 9112 §3.2 requires the 400 Bun sends);
 * - more header lines than Bun's parser holds (it answers 431 past about 200).
 */
const METHODS = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
  "TRACE",
  "CONNECT",
]);
// biome-ignore lint/suspicious/noControlCharactersInRegex: control bytes are what it looks for
const CTL = /[\x00-\x08\x0a-\x1f\x7f]/;
/** What the parser refuses in a request-target: CTL without DEL (see above). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control bytes are what it looks for
const TARGET_CTL = /[\x00-\x08\x0a-\x1f]/;
const MAX_HEADER_LINES = 150;

/**
 * Broken chunking is found only when a route reads the body: a route that needs none may
 * answer, and rightly. For these, any prompt answer is fine; only a hang is not.
 */
export const BODY_FRAMING = "chunk framing";

/** The body ends before its framing says it does: the parser waits for the rest. */
export function bodyCutShort(bytes: string): boolean {
  const headEnd = bytes.indexOf("\r\n\r\n");
  if (headEnd < 0) return false;
  const head = bytes.slice(0, headEnd).toLowerCase();
  const body = bytes.slice(headEnd + 4);
  const cl = /\r\ncontent-length:\s*(\d+)\s*(?:\r\n|$)/.exec(head);
  if (cl) return body.length < Number(cl[1]);
  if (/\r\ntransfer-encoding:\s*chunked\s*(?:\r\n|$)/.test(head))
    return !/(^|\r\n)0\r\n\r\n$/.test(body);
  return false;
}

export function malformedBecause(bytes: string): string | null {
  const headEnd = bytes.indexOf("\r\n\r\n");
  const head = headEnd < 0 ? bytes : bytes.slice(0, headEnd);
  const [line = "", ...fields] = head.split("\r\n");
  const parts = line.split(" ");
  if (parts.length !== 3) return "request line is not METHOD SP target SP version";
  const [method = "", target = "", version = ""] = parts;
  if (!METHODS.has(method))
    return `method ${JSON.stringify(method.slice(0, 12))} unknown to the parser`;
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") return "version";
  const form = target.startsWith("/") || /^[a-z][a-z0-9+.-]*:\/\//i.test(target);
  if (!form || TARGET_CTL.test(target) || target.includes("\t")) return "target";
  if (fields.length > MAX_HEADER_LINES) return "too many header lines";
  let lengths = 0;
  let chunked = false;
  let hosts = 0;
  for (const f of fields) {
    if (f.startsWith(" ") || f.startsWith("\t")) return "obs-fold";
    const colon = f.indexOf(":");
    if (colon <= 0) return "header line without a colon";
    if (CTL.test(f)) return "control byte in a header";
    const name = f.slice(0, colon).toLowerCase();
    const value = f.slice(colon + 1).trim();
    if (name === "host") hosts++;
    if (name === "content-length") {
      lengths++;
      if (!/^\d+$/.test(value) || value.length > 15) return "Content-Length";
    }
    if (name === "transfer-encoding") {
      if (value.toLowerCase() !== "chunked") return "Transfer-Encoding";
      chunked = true;
    }
  }
  if (lengths > 1 || (lengths > 0 && chunked)) return "framing";
  // RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 means the framing is faulty.
  if (chunked && version === "HTTP/1.0") return "framing";
  if (version === "HTTP/1.1" && hosts === 0) return "HTTP/1.1 without Host";
  if (chunked && headEnd >= 0 && !wellChunked(bytes.slice(headEnd + 4))) return BODY_FRAMING;
  return null;
}

/** Chunks as RFC 9112 §7.1 frames them: hex size (extensions allowed), CRLF, data, CRLF. */
function wellChunked(body: string): boolean {
  let at = 0;
  while (at < body.length) {
    const eol = body.indexOf("\r\n", at);
    // Cut short: the parser waits for the rest, unless what is there cannot start a size.
    if (eol < 0) return /^[0-9a-fA-F]*(;.*)?$/.test(body.slice(at));
    const size = body.slice(at, eol).split(";")[0]!.trim();
    if (!/^[0-9a-fA-F]+$/.test(size)) return false;
    const n = Number.parseInt(size, 16);
    // The last chunk: a trailer section after it is what Bun's parser cannot take (above).
    if (n === 0) return body.slice(eol + 2) === "\r\n" || body.slice(eol + 2) === "";
    at = eol + 2 + n;
    if (body.length >= at + 2 && body.slice(at, at + 2) !== "\r\n") return false;
    at += 2;
  }
  return true;
}
