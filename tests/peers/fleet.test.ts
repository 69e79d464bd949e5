/**
 * Three qm processes on loopback, federated (`kind = "qm"` peers): A serves m1, B m2, C m2 and
 * m3. A routes m2 to a peer, B routes m1 back to A; with B down, A's bare requests fail over to
 * C and `b/…` errors name B; B back, it is routed to again. A dead peer (a port nobody listens
 * on) errors naming it. Real processes: conditions are waited on with a timeout.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StatusJson } from "../../src/api/status-json.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, status, until } from "../support/e2e.ts";
import { freePort } from "../support/net.ts";
import { type QmServer, startQm } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(30_000);

const ports = { a: freePort(), b: freePort(), c: freePort(), dead: freePort() };
const url = (p: number) => `http://127.0.0.1:${p}`;

function configOf(name: string, port: number, body: string): string {
  const dir = mkdtempSync(join(tmpdir(), `qm-fleet-${name}-`));
  const path = join(dir, "quartermaster.toml");
  writeFileSync(
    path,
    `[server]\nlisten = ["127.0.0.1:${port}"]\nstart_port = ${20000 + Math.floor(Math.random() * 30000)}\nshutdown_timeout_s = 3\nstate_dir = "${join(dir, "state")}"\n\n[macros]\ndemo = "\${QM_BIN} demo-upstream --port \${PORT} --name \${MODEL_ID}"\n\n${body}`,
  );
  return path;
}

const model = (id: string) => `[models.${id}]\ncmd = "\${demo}"\n`;
const qmPeer = (name: string, port: number, extra = "") =>
  `[peers.${name}]\nurl = "${url(port)}"\nkind = "qm"\npoll_s = 1\ntimeout_s = 2\n${extra}`;

const configs = {
  a: configOf(
    "a",
    ports.a,
    `${model("m1")}\n${qmPeer("b", ports.b, "weight = 2\n")}\n${qmPeer("c", ports.c)}\n[peers.dead]\nurl = "${url(ports.dead)}"\nmodels = ["m9"]\ntimeout_s = 2\n`,
  ),
  b: configOf("b", ports.b, `${model("m2")}\n${qmPeer("a", ports.a)}`),
  c: configOf("c", ports.c, `${model("m2")}\n${model("m3")}`),
};

const servers: Partial<Record<"a" | "b" | "c", QmServer>> = {};

beforeAll(async () => {
  [servers.a, servers.b, servers.c] = await Promise.all([
    startQm(configs.a),
    startQm(configs.b),
    startQm(configs.c),
  ]);
});

afterAll(async () => {
  // Each stops cleanly, its peer watch with it (no process left behind).
  const codes = await Promise.all(Object.values(servers).map((s) => s?.stop()));
  expect(codes).toEqual([0, 0, 0]);
});

const peerOf = (s: StatusJson, name: string) => s.peers?.find((p) => p.name === name);

describe("a fleet of three", () => {
  test("each qm peer's models are discovered", async () => {
    const s = await until(
      () => status(url(ports.a)),
      (s) =>
        peerOf(s, "b")?.state === "up" &&
        (peerOf(s, "b")?.models.length ?? 0) > 0 &&
        (peerOf(s, "c")?.models.length ?? 0) > 1,
    );
    expect(peerOf(s, "b")?.models.map((m) => m.id)).toEqual(["m2"]);
    expect(peerOf(s, "c")?.models.map((m) => m.id)).toEqual(["m2", "m3"]);
    expect(peerOf(s, "dead")?.kind).toBe("openai");
  });

  test("A routes m2 to a peer (B: the higher weight), streamed; B routes m1 back to A", async () => {
    const res = await chat(url(ports.a), "m2");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-peer")).toBe("b");
    expect(((await res.json()) as { model: string }).model).toBe("m2");
    const streamed = await chat(url(ports.a), "b/m2", { stream: true });
    expect(streamed.headers.get("content-type")).toContain("text/event-stream");
    expect(await streamed.text()).toContain("[DONE]");
    await until(
      () => status(url(ports.b)),
      (s) => peerOf(s, "a")?.state === "up" && (peerOf(s, "a")?.models.length ?? 0) > 0,
    );
    const back = await chat(url(ports.b), "m1");
    expect(back.status).toBe(200);
    expect(back.headers.get("x-qm-peer")).toBe("a");
    await back.json();
  });

  test("a remote load's wait-status comments reach the client as the peer sent them", async () => {
    const res = await chat(url(ports.a), "c/m3", { stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-peer")).toBe("c");
    const text = await res.text();
    expect(text).toContain(": qm-status: loading");
    expect(text).toContain("[DONE]");
  });

  test("a dead peer: the error names it", async () => {
    const res = await chat(url(ports.a), "m9");
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      'peer "dead"',
    );
  });

  test("B down: m2 fails over to C, b/m2 names B; B back: routed to again", async () => {
    await servers.b?.stop();
    servers.b = undefined;
    const res = await chat(url(ports.a), "m2");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-peer")).toBe("c");
    await res.json();
    const named = await chat(url(ports.a), "b/m2");
    expect(named.status).toBeGreaterThanOrEqual(500);
    expect(((await named.json()) as { error: { message: string } }).error.message).toContain(
      'peer "b"',
    );
    servers.b = await startQm(configs.b);
    await until(
      () => status(url(ports.a)),
      (s) => peerOf(s, "b")?.state === "up",
      20_000,
    );
    const again = await chat(url(ports.a), "b/m2");
    expect(again.status).toBe(200);
    expect(again.headers.get("x-qm-peer")).toBe("b");
    await again.json();
  });
});
