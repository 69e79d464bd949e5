/** `qm logs` through the compiled binary, against a stand-in for a running qm on port 0. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { QM, ROOT } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

const kept: Record<string, string[]> = { a: ["a one", "a two"], "org/b": ["b one"] };
let follow: ReadableStreamDefaultController<Uint8Array> | null = null;
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(req) {
    const url = new URL(req.url);
    if (url.pathname === "/api/status") {
      return Response.json({ models: Object.keys(kept).map((id) => ({ id })) });
    }
    const m = /^\/api\/models\/(.+)\/logs$/.exec(url.pathname);
    const id = m ? decodeURIComponent(m[1]!) : "";
    if (!(id in kept)) {
      return Response.json({ error: { message: `model "${id}" not found` } }, { status: 404 });
    }
    if (url.searchParams.get("follow") !== "1") {
      return new Response(kept[id]!.map((l) => `${l}\n`).join(""));
    }
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        follow = c;
        c.enqueue(new TextEncoder().encode(": keep-alive\n\nevent: log\ndata: live 1\n\n"));
        c.enqueue(
          new TextEncoder().encode(
            "event: other\ndata: not a line\n\nevent: log\ndata: live 2\n\n",
          ),
        );
        c.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  },
});
afterAll(() => server.stop(true));

async function qm(...args: string[]) {
  const proc = Bun.spawn([QM, "logs", "--url", server.url.href, ...args], {
    cwd: ROOT,
    env: { ...process.env, QM_CONFIG: "", QM_API_KEY: "" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = [
    await new Response(proc.stdout).text(),
    await new Response(proc.stderr).text(),
    await proc.exited,
  ];
  return { code, out, err };
}

test("one model's lines as they are; every model's prefixed with its id", async () => {
  expect(await qm("a")).toEqual({ code: 0, out: "a one\na two\n", err: "" });
  expect(await qm()).toEqual({
    code: 0,
    out: "[a] a one\n[a] a two\n[org/b] b one\n",
    err: "",
  });
});

test("-f prints each log event's line, and nothing else of the stream", async () => {
  expect(await qm("a", "-f")).toEqual({ code: 0, out: "live 1\nlive 2\n", err: "" });
  expect(follow).not.toBeNull();
});

test("an unknown model is an error in words (exit 1); two models a usage error (exit 2)", async () => {
  const r = await qm("nope");
  expect([r.code, r.err]).toEqual([
    1,
    'qm: GET /api/models/nope/logs: 404 model "nope" not found\n',
  ]);
  expect((await qm("a", "b")).code).toBe(2);
});
