/**
 * The floor for any *model router* in Bun on this machine: `Bun.serve` + `fetch`, plus only
 * what a router that picks the model from the body cannot skip — read the body whole, parse it
 * as JSON for `model`, drop hop-by-hop headers both ways, and own the answer (read it whole,
 * then send it on) so the router knows the moment the model is free. No scheduler, no time
 * limits, no edge checks. qm ÷ this floor is what qm's own work costs; floor ÷ bare is what no
 * model router can win back.
 *
 * Usage: bun scripts/bench/router-floor.ts --port N --target http://127.0.0.1:PORT
 */
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { port: { type: "string", default: "0" }, target: { type: "string" } },
});
const target = values.target;
if (!target) throw new Error("--target is required");

const REQUEST_DROP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "host",
  "content-length",
]);
const RESPONSE_DROP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "content-length",
  "date",
]);
const decoder = new TextDecoder();

function without(headers: Headers, drop: ReadonlySet<string>): Headers {
  const out = new Headers(headers);
  for (const key of headers.keys()) if (drop.has(key)) out.delete(key);
  return out;
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(values.port),
  idleTimeout: 0,
  async fetch(req) {
    const url = req.url;
    const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
    const body = await req.bytes();
    const parsed = JSON.parse(decoder.decode(body)) as { model?: unknown };
    if (typeof parsed.model !== "string") return new Response("no model", { status: 400 });
    const res = await fetch(target + path, {
      method: req.method,
      headers: without(req.headers, REQUEST_DROP),
      body,
      signal: req.signal,
      decompress: false,
    } as RequestInit);
    const headers = without(res.headers, RESPONSE_DROP);
    headers.set("x-model", parsed.model);
    return new Response(await res.bytes(), { status: res.status, headers });
  },
});
console.log(`listening on http://127.0.0.1:${server.port}`);

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    void server.stop(true).then(() => process.exit(0));
  });
}
