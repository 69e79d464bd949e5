/**
 * Ids in Anthropic's style. Tool-use ids must match `^[a-zA-Z0-9_-]+$` (the API rejects others
 * when the history comes back), so ids invented by upstream tool parsers (`functions.Bash:0`)
 * are sanitised, and missing ones are made up as `toolu_<24 hex>`.
 */
function hex(n: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(Math.ceil(n / 2)));
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s.slice(0, n);
}

export const messageId = (): string => `msg_${hex(24)}`;
export const toolUseId = (): string => `toolu_${hex(24)}`;
export const requestId = (): string => `req_${hex(24)}`;

export function sanitizeToolId(id: unknown): string {
  if (typeof id !== "string" || id === "") return toolUseId();
  const clean = id.replace(/[^a-zA-Z0-9_-]/g, "_");
  return clean;
}
