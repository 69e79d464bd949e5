/**
 * A model's port taken by a process qm did not start: the client's prompt must never reach
 * that stranger. With `${PORT}` the model moves to a free port; with a port written in the
 * config the request fails with 503 naming the port and the process holding it.
 */
import { afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, status } from "../support/e2e.ts";
import { freePort } from "../support/net.ts";
import { ownConfig } from "../support/own-config.ts";
import { type QmServer, startQm } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(20_000);

const servers: QmServer[] = [];
const strangers: Bun.Server<undefined>[] = [];

afterEach(async () => {
  for (const qm of servers.splice(0)) expect(await qm.stop()).toBe(0);
  await Promise.all(strangers.splice(0).map((s) => s.stop(true)));
});

/** Answers everything with 200, like a healthy upstream would, and remembers what it got. */
function stranger(port: number): { seen: string[] } {
  const seen: string[] = [];
  strangers.push(
    Bun.serve({
      hostname: "127.0.0.1",
      port,
      fetch(req) {
        seen.push(`${req.method} ${new URL(req.url).pathname}`);
        return Response.json({ choices: [{ message: { role: "assistant", content: "gotcha" } }] });
      },
    }),
  );
  return { seen };
}

async function serveOwn(body: string, server = ""): Promise<QmServer> {
  const qm = await startQm(ownConfig(body, server).path);
  servers.push(qm);
  return qm;
}

type ModelStatus = { id: string; port: number | null; state: string };
const modelOf = async (url: string, id: string) =>
  (await status(url)).models.find((m) => m.id === id) as unknown as ModelStatus;

describe("a model's port is taken when it starts", () => {
  test("with a port qm chose it moves to a free one; the stranger never gets the prompt", async () => {
    const port = freePort();
    // The first ${PORT} goes to start_port, which is free while qm loads its config.
    const qm = await serveOwn(`[models.one]\ncmd = "\${demo}"\n`, `start_port = ${port}\n`);
    expect((await modelOf(qm.url, "one")).port).toBe(port);
    const { seen } = stranger(port);
    const res = await chat(qm.url, "one");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]!.message.content).not.toBe("gotcha");
    expect(seen).toEqual([]);
    const moved = await modelOf(qm.url, "one");
    expect(moved.port).not.toBe(port);
    expect(moved.state).toBe("ready");
    await qm.waitLog(`port ${port} is in use by pid ${process.pid}`);
    await qm.waitLog(`starting it on port ${moved.port} instead`);
    // The next request goes to the same, moved, model.
    const again = await chat(qm.url, "one");
    expect(again.status).toBe(200);
    await again.json();
    expect(seen).toEqual([]);
  });

  test("with a port written in the config the request fails with 503 naming port and holder", async () => {
    const port = freePort();
    const qm = await serveOwn(
      `[models.fixed]\ncmd = "\${QM_BIN} demo-upstream --port ${port} --name fixed"\n` +
        `proxy = "http://127.0.0.1:${port}"\n`,
    );
    expect((await modelOf(qm.url, "fixed")).port).toBeNull();
    const { seen } = stranger(port);
    const res = await chat(qm.url, "fixed");
    expect(res.status).toBe(503);
    const err = ((await res.json()) as { error: { code: string; message: string } }).error;
    expect(err.code).toBe("port_in_use");
    expect(err.message).toContain(`port ${port}`);
    expect(err.message).toContain(`pid ${process.pid} (`);
    expect(seen).toEqual([]);
    expect((await modelOf(qm.url, "fixed")).state).toBe("failed");
    // Nothing was started for it.
    expect(qm.log()).not.toContain('starting model "fixed"');
  });
});
