/**
 * Which names may name a model or a peer. qm sends a model's id back in the `X-QM-Model`
 * response header and a peer's name in `X-QM-Peer`; an HTTP field value is a string of bytes
 * (RFC 9110 §5.5), which a Fetch `Headers` object holds as Latin-1 (a ByteString, WHATWG Fetch
 * §5.2), so a name with a character past U+00FF (`模型`) — or a control character — cannot be
 * sent at all: such names are refused when the config is loaded, at their line and column,
 * and dropped when a peer lists them (src/peers/discover.ts). An alias never travels in a
 * header (the id it resolves to does), so aliases may hold any character.
 */

/** The longest model id taken from a peer's list (a name, not a document). */
export const MAX_PEER_ID = 256;

/** C0 and C1 controls and DEL: never printable, never in a header. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** Past Latin-1: not a byte of a header value. */
const WIDE = /[\u0100-\u{10ffff}]/u;

/** `U+6A21` for `模`. */
function codePoint(ch: string): string {
  return `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
}

/**
 * Why `name` cannot travel in an HTTP header as it is, or null when it can: a control
 * character, or one past U+00FF.
 */
export function headerProblem(name: string): string | null {
  const control = CONTROL.exec(name);
  if (control) return `has a control character (${codePoint(control[0])})`;
  const wide = WIDE.exec(name);
  if (wide) {
    return `has ${JSON.stringify(wide[0])} (${codePoint(wide[0])}), a character an HTTP header cannot carry (it holds Latin-1 only)`;
  }
  return null;
}

/** Why a peer's model id (or alias) is not taken, or null: empty, too long, or not header-safe. */
export function peerIdProblem(id: string): string | null {
  if (id === "") return "is empty";
  if (id.length > MAX_PEER_ID) return `is longer than ${MAX_PEER_ID} characters`;
  return headerProblem(id);
}
