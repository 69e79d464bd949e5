/**
 * What promtool's lint may say of qm's `/metrics`: colons in metric names (reserved for
 * recording rules) — the engines' own names (`llamacpp:…`, a vLLM's renamed `upstream:vllm:…`)
 * and the model server protocol's four, which are vLLM's names by design
 * (src/observe/model-server.ts). Nothing else.
 */
import { PROTOCOL_NAMES } from "../../src/observe/model-server.ts";

const PROTOCOL = new Set<string>(Object.values(PROTOCOL_NAMES));

export function colonLint(line: string): boolean {
  const m = /^(\S+) metric names should not contain ':'$/.exec(line);
  if (!m) return false;
  const name = m[1]!;
  return PROTOCOL.has(name) || /^(llamacpp|upstream:vllm):/.test(name);
}
