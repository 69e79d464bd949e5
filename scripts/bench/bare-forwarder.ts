/**
 * The floor for any Bun proxy on this machine: `Bun.serve` + `fetch`, nothing else — no
 * routing, no JSON parsing, no header hygiene, no scheduler. The benchmark compares qm with
 * this, run in its own process like qm, so both pay the same process and loopback costs.
 *
 * `--read-chunks`: the answer's body is read chunk by chunk in JavaScript and each chunk written
 * and flushed as it comes (a "direct" stream, as qm's relay does), instead of being handed to
 * Bun unread. It is the floor for a proxy that must see its streams' bytes (to know how a stream
 * ended, read its usage, time its chunks); the plain mode is the floor for one that need not.
 *
 * Usage: bun scripts/bench/bare-forwarder.ts --port N --target http://127.0.0.1:PORT [--read-chunks]
 */
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    target: { type: "string" },
    "read-chunks": { type: "boolean", default: false },
  },
});
const target = values.target;
if (!target) throw new Error("--target is required");
const readChunks = values["read-chunks"];

/** The body read and written a chunk at a time in JavaScript, nothing else done with it. */
function relayed(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const direct: Bun.DirectUnderlyingSource<Uint8Array> = {
    type: "direct",
    async pull(controller) {
      for (;;) {
        const step = await reader.read();
        if (step.done) break;
        const wrote = controller.write(step.value);
        if (typeof wrote !== "number") await wrote;
        const flushed = controller.flush();
        if (typeof flushed !== "number") await flushed;
      }
      controller.close();
    },
    cancel: (reason) => reader.cancel(reason),
  };
  return new ReadableStream(direct as unknown as Bun.UnderlyingSource<Uint8Array>);
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(values.port),
  idleTimeout: 0,
  async fetch(req) {
    const url = req.url;
    const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
    // The body is read whole, as any proxy that routes on `model` must do.
    const answer = await fetch(target + path, {
      method: req.method,
      headers: req.headers,
      body: req.method === "GET" ? null : await req.arrayBuffer(),
      decompress: false,
    } as RequestInit);
    if (!readChunks || !answer.body) return answer;
    return new Response(relayed(answer.body), { status: answer.status, headers: answer.headers });
  },
});
console.log(`listening on http://127.0.0.1:${server.port}`);

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    void server.stop(true).then(() => process.exit(0));
  });
}
