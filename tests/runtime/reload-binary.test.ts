/**
 * The compiled `dist/qm`: the config edited on disk, then SIGHUP (or, with the watch on, the
 * edit alone) applies it without restarting the running model (same pid).
 */
import { afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, configFile, status, until } from "../support/e2e.ts";
import { type QmServer, startQm } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(30_000);

const servers: QmServer[] = [];
afterEach(async () => {
  for (const qm of servers.splice(0)) {
    if (qm.proc.exitCode === null && qm.proc.signalCode === null) await qm.stop();
  }
});

const ONE = `[models.one]\ncmd = "\${demo}"\n`;
const TWO = `\n[models.two]\ncmd = "\${demo}"\naliases = ["deux"]\n`;

async function running(server: string) {
  const cfg = configFile(`[server]\n${server}\n${ONE}`);
  const qm = await startQm(cfg.path);
  servers.push(qm);
  const res = await chat(qm.url, "one");
  expect(res.status).toBe(200);
  await res.json();
  const one = (await status(qm.url)).models.find((m) => m.id === "one")!;
  expect(one.state).toBe("ready");
  expect(one.pid).toBeNumber();
  return { qm, path: cfg.path, pid: one.pid };
}

const reloads = (qm: QmServer) => qm.log().split("config reloaded").length - 1;

describe("reload of a running dist/qm", () => {
  test("SIGHUP applies the edited file; the running model keeps its process", async () => {
    const { qm, path, pid } = await running("watch_config = false");
    appendFileSync(path, TWO);
    qm.proc.kill("SIGHUP");
    await until(
      async () => reloads(qm),
      (n) => n === 1,
      8000,
    );
    expect(qm.log()).toContain("added two");
    const after = await status(qm.url);
    expect(after.models.find((m) => m.id === "one")).toMatchObject({ state: "ready", pid });
    const res = await chat(qm.url, "deux");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-model")).toBe("two");
    await res.json();
    // (Serving two then swapped one out: both are in the default group, one at a time.)
  });

  test("a bad edit changes nothing and the log names the line; the watch applies a fix", async () => {
    const { qm, path, pid } = await running("");
    const good = readFileSync(path, "utf8");
    writeFileSync(path, `${good}\n[models.two]\ncmd = 5\n`);
    await until(
      async () => qm.log(),
      (log) => log.includes("config reload failed"),
      8000,
    );
    expect(qm.log()).toMatch(/quartermaster\.toml:\d+:\d+: models\.two\.cmd/);
    writeFileSync(path, `${good}${TWO}`);
    await until(
      async () => reloads(qm),
      (n) => n === 1,
      8000,
    );
    const after = await status(qm.url);
    expect(after.models.map((m) => m.id).sort()).toEqual(["one", "two"]);
    expect(after.models.find((m) => m.id === "one")).toMatchObject({ state: "ready", pid });
  });
});
