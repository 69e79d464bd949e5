/**
 * The compiled binary with more than the runtime's default 256 upstream requests in flight at
 * once (src/cli/fetch-limit.ts): `qm serve` restarts itself in place with the runtime's limit
 * raised, so 300 concurrent requests all reach the upstream together.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import {
  BUN_DEFAULT_FETCH_LIMIT,
  FETCH_LIMIT,
  FETCH_LIMIT_VAR,
} from "../../src/cli/fetch-limit.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { writeConfig } from "../support/e2e.ts";
import { type QmServer, startQm } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);
setDefaultTimeout(30_000);

const IN_FLIGHT = BUN_DEFAULT_FETCH_LIMIT + 44;

/** An upstream that answers no request until IN_FLIGHT of them are waiting at once. */
let live = 0;
let peak = 0;
const waiting: (() => void)[] = [];
const upstream = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  async fetch(req) {
    if (!new URL(req.url).pathname.endsWith("/chat/completions")) {
      return Response.json({ object: "list", data: [{ id: "m", object: "model" }] });
    }
    live++;
    peak = Math.max(peak, live);
    if (live >= IN_FLIGHT) for (const release of waiting.splice(0)) release();
    else await new Promise<void>((release) => waiting.push(release));
    live--;
    return Response.json({
      id: "c",
      object: "chat.completion",
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
    });
  },
});

let qm: QmServer;
beforeAll(async () => {
  // As a user starts it: without the variable (whatever this test's own environment holds).
  qm = await startQm(
    writeConfig(`[peers.up]\nurl = "http://127.0.0.1:${upstream.port}"\nmodels = ["m"]\n`),
    {},
    { unset: [FETCH_LIMIT_VAR] },
  );
});

afterAll(async () => {
  for (const release of waiting.splice(0)) release();
  expect(await qm.stop()).toBe(0);
  await upstream.stop(true);
});

/**
 * One POST on a connection of its own, the status line's code once the answer ends. Plain
 * sockets: this test's own `fetch` has the runtime's default limit.
 */
function post(url: string, path: string, body: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = "";
    socket.setEncoding("utf8");
    socket.on("connect", () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    socket.on("data", (d: string) => {
      text += d;
    });
    socket.on("end", () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)));
    socket.on("error", reject);
  });
}

test("qm serve runs on in the process it was started as, with the runtime's limit raised", () => {
  const environ = readFileSync(`/proc/${qm.proc.pid}/environ`, "utf8").split("\0");
  expect(environ).toContain(`${FETCH_LIMIT_VAR}=${FETCH_LIMIT}`);
  expect(qm.log()).not.toContain("upstream requests can be in flight");
});

test(`${IN_FLIGHT} requests are in flight upstream at once, and all are answered`, async () => {
  const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] });
  const codes = await Promise.all(
    Array.from({ length: IN_FLIGHT }, () => post(qm.url, "/v1/chat/completions", body)),
  );
  expect(codes.filter((c) => c !== 200)).toEqual([]);
  expect(peak).toBe(IN_FLIGHT);
});
