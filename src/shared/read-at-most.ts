/**
 * An answer's body read whole, but never past `maxBytes`: one that says (content-length) or
 * turns out larger is cancelled unread past the limit, and `null` is returned.
 */
export async function readAtMost(res: Response, maxBytes: number): Promise<Uint8Array | null> {
  const length = Number(res.headers.get("content-length") ?? Number.NaN);
  if (length > maxBytes) {
    await res.body?.cancel().catch(() => {});
    return null;
  }
  if (!res.body) return new Uint8Array(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
