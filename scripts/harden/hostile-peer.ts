/**
 * `bun scripts/harden/hostile-peer.ts KIND`: a peer that misbehaves as KIND says, on
 * 127.0.0.1 and a port the kernel picks, until it is killed. It runs apart from the harden
 * process so that its own work (a flood) is not counted against qm's latencies. Its first line
 * on stdout is `listening on URL`; with `redirect`, the second is `elsewhere on URL`, the host
 * it redirects to, which counts in `GET /hits` what reached it.
 *
 * - `event-line`: `/api/events` is one line that never ends;
 * - `status-body`: no events (404); `/api/status` is a body that never ends;
 * - `model-ids`: no events; `/api/status` lists 100 000 models — by turns 2 KiB ids (200 MB,
 *   streamed) and short ones, a fifth valid, the rest NUL bytes, `../`, HTML, `模型`;
 * - `redirect`: every path is a 307 to the other host;
 * - `flood`: `/api/events` sends valid `event: status` frames as fast as the socket takes them.
 */

const KINDS = ["event-line", "status-body", "model-ids", "redirect", "flood"] as const;
export type HostileKind = (typeof KINDS)[number];
export const HOSTILE_KINDS: readonly HostileKind[] = KINDS;

const encoder = new TextEncoder();
const notFound = () => new Response("not found", { status: 404 });

/** A body that repeats `chunk` until the reader stops (`limit`: then it ends). */
function repeating(
  chunk: Uint8Array,
  head = new Uint8Array(0),
  limit = Infinity,
): ReadableStream<Uint8Array> {
  let sent = 0;
  let first = true;
  return new ReadableStream({
    pull(c) {
      if (first) {
        first = false;
        if (head.length > 0) c.enqueue(head);
      }
      if (sent >= limit) {
        c.close();
        return;
      }
      c.enqueue(chunk);
      sent += chunk.length;
    },
  });
}

const sse = (body: ReadableStream<Uint8Array>) =>
  new Response(body, { headers: { "content-type": "text/event-stream" } });

/** 100 000 models with 2 KiB ids, streamed: 200 MB if anyone read it all. */
function hugeIds(): Response {
  let i = 0;
  const pad = "x".repeat(2048);
  return new Response(
    new ReadableStream({
      pull(c) {
        if (i === 0) c.enqueue(encoder.encode('{"models":['));
        if (i >= 100_000) {
          c.enqueue(encoder.encode("]}"));
          c.close();
          return;
        }
        const batch: string[] = [];
        for (let j = 0; j < 100 && i < 100_000; j++, i++) {
          batch.push(JSON.stringify({ id: `${pad}${i}`, state: "ready" }));
        }
        c.enqueue(encoder.encode((i > 100 ? "," : "") + batch.join(",")));
      },
    }),
    { headers: { "content-type": "application/json" } },
  );
}

/** 100 000 short ids, a fifth of them valid: within the answer bound, past the model cap. */
function manyIds(): Response {
  const bad = ["a\u0000b", "../../etc", "<script>x</script>", "模型"];
  const models = Array.from({ length: 100_000 }, (_, i) => ({
    id: i % 5 === 0 ? `m${i}` : `${bad[i % 4]}${i}`,
    state: i % 10 === 0 ? "ready" : "stopped",
  }));
  return Response.json({ models });
}

export function hostileHandler(kind: HostileKind, elsewhere = ""): (req: Request) => Response {
  let turn = 0;
  const flood = (() => {
    const frames: string[] = [];
    for (let i = 0; i < 500; i++) {
      const models = [
        { id: "m1", state: i % 2 === 0 ? "ready" : "stopped" },
        { id: "m2", state: "stopped" },
      ];
      frames.push(`event: status\nid: ${i}\ndata: ${JSON.stringify({ models })}\n\n`);
    }
    return encoder.encode(frames.join(""));
  })();
  const line = encoder.encode("x".repeat(65536));
  return (req) => {
    const path = new URL(req.url).pathname;
    switch (kind) {
      case "event-line":
        return path === "/api/events" ? sse(repeating(line, encoder.encode("data: "))) : notFound();
      case "status-body":
        return path === "/api/status"
          ? new Response(repeating(line, encoder.encode('{"models":["')), {
              headers: { "content-type": "application/json" },
            })
          : notFound();
      case "model-ids":
        if (path !== "/api/status") return notFound();
        return turn++ % 2 === 0 ? hugeIds() : manyIds();
      case "redirect":
        return Response.redirect(`${elsewhere}${path}`, 307);
      case "flood":
        return path === "/api/events" ? sse(repeating(flood)) : notFound();
    }
  };
}

if (import.meta.main) {
  const kind = process.argv[2] as HostileKind;
  if (!KINDS.includes(kind)) {
    process.stderr.write(`usage: hostile-peer.ts ${KINDS.join("|")}\n`);
    process.exit(2);
  }
  let hits = 0;
  const other = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      if (new URL(req.url).pathname === "/hits") return Response.json({ hits });
      hits++;
      return new Response("you should not be here");
    },
  });
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: hostileHandler(kind, `http://127.0.0.1:${other.port}`),
  });
  process.stdout.write(`listening on http://127.0.0.1:${server.port}\n`);
  process.stdout.write(`elsewhere on http://127.0.0.1:${other.port}\n`);
}
