/**
 * `qm doctor`'s managed-node check: the node asked over an injected fetch (a fake mistral.rs
 * node, and a fake running qm's status), on real config files.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DoctorDeps } from "../../src/cli/doctor/check.ts";
import { DOCTOR_CHECKS } from "../../src/cli/doctor/checks.ts";
import { doctorCommand } from "../../src/cli/doctor/command.ts";
import type { Fetch } from "../../src/shared/fetch.ts";
import { FakeMistralrs } from "../support/fake-mistralrs.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "qm-doctor-node-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const NODE = `[server]\nlisten = ["127.0.0.1:18080"]\n[peers.gpu3]\nurl = "http://gpu3.test:1234"\nkind = "mistralrs"\ntimeout_s = 2\n`;

/** The node at gpu3.test; qm's status at 127.0.0.1:18080 when `qmPeers` is given. */
function routes(node: FakeMistralrs | null, qmPeers?: object[]): Fetch {
  return async (url, init) => {
    if (url.startsWith("http://127.0.0.1:18080/")) {
      if (!qmPeers)
        throw Object.assign(new TypeError("Unable to connect"), { code: "ECONNREFUSED" });
      return Response.json({ peers: qmPeers });
    }
    if (!node) throw Object.assign(new TypeError("Unable to connect"), { code: "ECONNREFUSED" });
    return node.fetch(url, init);
  };
}

let n = 0;
async function nodeLines(toml: string, fetch: Fetch): Promise<{ code: number; lines: string[] }> {
  const path = join(dir, `c${n++}.toml`);
  await writeFile(path, toml);
  let out = "";
  const deps = { env: {}, fetch } as unknown as DoctorDeps;
  const checks = DOCTOR_CHECKS.filter((c) => c.id === "nodes");
  const code = await doctorCommand(["-c", path], {
    out: (t) => {
      out += t;
    },
    deps,
    checks,
  });
  return { code, lines: out.trim().split("\n").slice(0, -1) };
}

describe("qm doctor: managed nodes", () => {
  test("a node that lists a model unloaded can unload", async () => {
    const node = new FakeMistralrs({ models: ["a", "b"], loaded: ["a"] });
    const r = await nodeLines(`${NODE}max_loaded = 1\n`, routes(node));
    expect(r).toEqual({
      code: 0,
      lines: ["✓ node gpu3: 2 models (1 loaded, 1 unloaded); it can unload"],
    });
  });

  test("all loaded under a limit: a note that it cannot be known before an unload", async () => {
    const node = new FakeMistralrs({ models: ["a", "b"], noLoaderConfig: true });
    const r = await nodeLines(`${NODE}max_loaded = 1\n`, routes(node));
    expect(r.code).toBe(0);
    expect(r.lines).toEqual([
      "• node gpu3: 2 models (2 loaded, 0 unloaded); whether it can unload is not known until qm unloads one there (a stock `mistralrs from-config` node cannot: its unload drops the model)",
    ]);
  });

  test("the running qm saw no_loader_config: failed, with the fix", async () => {
    const node = new FakeMistralrs({ models: ["a", "b"], noLoaderConfig: true });
    const r = await nodeLines(
      `${NODE}max_loaded = 1\n`,
      routes(node, [{ name: "gpu3", can_unload: false }]),
    );
    expect(r.code).toBe(1);
    expect(r.lines[0]).toStartWith(
      "✗ node gpu3: 2 models (2 loaded, 0 unloaded); it answered an unload with no_loader_config",
    );
    expect(r.lines[0]).toContain("— fix: serve models that keep a loader config");
  });

  test("a node that does not answer: failed, naming its URL", async () => {
    const r = await nodeLines(NODE, routes(null));
    expect(r.code).toBe(1);
    expect(r.lines[0]).toStartWith(
      '✗ node gpu3: http://gpu3.test:1234 did not answer GET /v1/models: node "gpu3": GET /v1/models failed',
    );
    expect(r.lines[0]).toContain("— fix: start the node, or fix peers.gpu3.url (and api_key)");
  });
});
