import { QmError } from "../../shared/errors.ts";

const decoder = new TextDecoder();

/** A request body that must be a JSON object; anything else is a 400 saying what is wrong. */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(bytes));
  } catch {
    throw new QmError("bad_request", "request body is not valid JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new QmError("bad_request", "request body must be a JSON object");
  }
  return json as Record<string, unknown>;
}

function tooLarge(limit: number): QmError {
  const mb = Math.round((limit / 1024 / 1024) * 10) / 10;
  return new QmError(
    "payload_too_large",
    `request body is larger than the ${mb} MB limit (server.max_body_mb)`,
  );
}

/**
 * Reads a request body, refusing more than `limit` bytes. A declared Content-Length over the
 * limit is refused before reading; a chunked body is counted as it arrives and cut at the limit.
 */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    if (Number(declared) > limit) throw tooLarge(limit);
    return new Uint8Array(await request.arrayBuffer());
  }
  if (!request.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of request.body) {
    total += chunk.byteLength;
    if (total > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
