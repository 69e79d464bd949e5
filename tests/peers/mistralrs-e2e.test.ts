/**
 * A managed mistral.rs node end to end: `dist/qm` with `[peers.node] kind = "mistralrs"`
 * (max_loaded = 2) in front of the fake node served as a process. Routing by `NODE/MODEL` and by
 * bare name through the OpenAI and Anthropic APIs, LRU unloads over HTTP, a model unloaded
 * outside qm, the node down, and a clean stop that leaves the node's models alone. Real
 * processes: conditions are waited on with a timeout.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { StatusJson } from "../../src/api/status-json.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, status, until } from "../support/e2e.ts";
import { freePort } from "../support/net.ts";
import { type QmServer, startQm } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(30_000);

const FAKE = resolve(import.meta.dir, "../support/fake-mistralrs.ts");
const ports = { qm: freePort(), node: freePort() };
const qmUrl = `http://127.0.0.1:${ports.qm}`;
const nodeUrl = `http://127.0.0.1:${ports.node}`;

interface NodeState {
  status: Record<string, string>;
  calls: string[];
  peak: number;
}

let node: ReturnType<typeof Bun.spawn> | null = null;
let qm: QmServer | undefined;

async function startNode(): Promise<void> {
  node = Bun.spawn(
    ["bun", FAKE, "--port", String(ports.node), "--models", "a,b,c", "--key", "node-key"],
    { stdout: "pipe", stderr: "inherit" },
  );
  await until(
    () =>
      fetch(`${nodeUrl}/_fake/state`).then(
        (r) => r.ok,
        () => false,
      ),
    (ok) => ok,
  );
}

const nodeState = async (): Promise<NodeState> =>
  (await (await fetch(`${nodeUrl}/_fake/state`)).json()) as NodeState;

beforeAll(async () => {
  await startNode();
  const dir = mkdtempSync(join(tmpdir(), "qm-mistralrs-"));
  const path = join(dir, "quartermaster.toml");
  writeFileSync(
    path,
    `[server]\nlisten = ["127.0.0.1:${ports.qm}"]\nshutdown_timeout_s = 3\nstate_dir = "${join(dir, "state")}"\n\n[peers.node]\nurl = "${nodeUrl}"\nkind = "mistralrs"\napi_key = "node-key"\nmax_loaded = 2\npoll_s = 0.5\ntimeout_s = 2\n`,
  );
  qm = await startQm(path);
});

afterAll(async () => {
  const code = await qm?.stop();
  expect(code).toBe(0);
  // Stopping qm unloads nothing on the node: it is not qm's process.
  if (node) {
    const s = await nodeState().catch(() => null);
    if (s) expect(s.calls.filter((c) => c.startsWith("unload"))).toEqual([]);
    node.kill();
    await node.exited;
  }
});

const modelOf = (s: StatusJson, id: string) => s.models.find((m) => m.id === id);

describe("a managed mistral.rs node, from the compiled binary", () => {
  test("its models are discovered and listed as NODE/MODEL", async () => {
    const s = await until(
      () => status(qmUrl),
      (s) => s.models.filter((m) => m.id.startsWith("node/")).length === 3,
    );
    expect(s.peers?.find((p) => p.name === "node")).toMatchObject({
      kind: "mistralrs",
      state: "up",
    });
    const list = (await (await fetch(`${qmUrl}/v1/models`)).json()) as { data: { id: string }[] };
    expect(list.data.map((m) => m.id).sort()).toEqual(["node/a", "node/b", "node/c"]);
  });

  test("NODE/MODEL over OpenAI: loaded on the node with its key, then answered by it", async () => {
    const res = await chat(qmUrl, "node/a");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-model")).toBe("node/a");
    expect(res.headers.get("x-qm-peer")).toBe("node");
    const body = (await res.json()) as {
      model: string;
      choices: { message: { content: string } }[];
    };
    expect(body.choices[0]?.message.content).toBe("hello from a");
    expect(body.model).toBe("node/a");
    expect((await nodeState()).calls).toEqual(["reload a"]);
  });

  test("a bare name over Anthropic routes to the node; a third model unloads the least recently used", async () => {
    const res = await fetch(`${qmUrl}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({
        model: "b",
        max_tokens: 16,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    expect(res.status).toBe(200);
    const msg = (await res.json()) as { type: string; content: { text: string }[] };
    expect(msg.type).toBe("message");
    expect(msg.content[0]?.text).toBe("hello from b");
    const streamed = await chat(qmUrl, "node/c", { stream: true });
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain("hello from c");
    const s = await nodeState();
    expect(s.calls).toEqual(["reload a", "reload b", "unload a", "reload c"]);
    expect(s.peak).toBe(2);
    const st = await status(qmUrl);
    expect(["a", "b", "c"].map((m) => modelOf(st, `node/${m}`)?.state)).toEqual([
      "stopped",
      "ready",
      "ready",
    ]);
  });

  test("the node down: a bare name is a 502 naming it; back: served again", async () => {
    node?.kill();
    await node?.exited;
    node = null;
    await until(
      () => status(qmUrl),
      (s) => s.peers?.find((p) => p.name === "node")?.state === "down",
    );
    const res = await chat(qmUrl, "b");
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      'peer "node" is down',
    );
    await startNode();
    await until(
      () => status(qmUrl),
      (s) => s.peers?.find((p) => p.name === "node")?.state === "up",
    );
    // The restarted node has nothing loaded: qm sees b and c gone and loads a again on request.
    await until(
      () => status(qmUrl),
      (s) => modelOf(s, "node/b")?.state === "stopped" && modelOf(s, "node/c")?.state === "stopped",
    );
    const again = await chat(qmUrl, "a");
    expect(again.status).toBe(200);
    await again.json();
    expect((await nodeState()).calls).toEqual(["reload a"]);
  });
});
