/**
 * The floor for any Bun proxy on this machine: `Bun.serve` + `fetch`, nothing else — no
 * routing, no JSON parsing, no header hygiene, no scheduler. The benchmark compares qm with
 * this, run in its own process like qm, so both pay the same process and loopback costs.
 *
 * Usage: bun scripts/bench/bare-forwarder.ts --port N --target http://127.0.0.1:PORT
 */
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { port: { type: "string", default: "0" }, target: { type: "string" } },
});
const target = values.target;
if (!target) throw new Error("--target is required");

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(values.port),
  idleTimeout: 0,
  async fetch(req) {
    const url = req.url;
    const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
    // The body is read whole, as any proxy that routes on `model` must do.
    return fetch(target + path, {
      method: req.method,
      headers: req.headers,
      body: req.method === "GET" ? null : await req.arrayBuffer(),
      decompress: false,
    } as RequestInit);
  },
});
console.log(`listening on http://127.0.0.1:${server.port}`);

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    void server.stop(true).then(() => process.exit(0));
  });
}
