/** `qm unload` through the compiled binary, against a stand-in for a running qm on port 0. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { QM, ROOT } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

const seen: string[] = [];
const leased = (message: string) =>
  Response.json({ error: { message, type: "conflict", code: "conflict" } }, { status: 409 });
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(req) {
    const url = new URL(req.url);
    seen.push(`${req.method} ${url.pathname}${url.search}`);
    if (url.searchParams.get("force") === "true") return Response.json({ model: "a" });
    if (url.pathname === "/api/models/a/unload") {
      return leased(
        "cannot unload: leased (lease l1 by bench); release the lease or add ?force=true to revoke it",
      );
    }
    return leased("cannot unload: a is leased");
  },
});
afterAll(() => server.stop(true));

async function qm(...args: string[]) {
  const proc = Bun.spawn([QM, "unload", "--url", server.url.href, ...args], {
    cwd: ROOT,
    env: { ...process.env, QM_CONFIG: "", QM_API_KEY: "" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, out, err };
}

test("a leased model's 409 tells a command-line user --force, not ?force=true", async () => {
  expect(await qm("a")).toEqual({
    code: 1,
    out: "",
    err: "qm: POST /api/models/a/unload: 409 cannot unload: leased (lease l1 by bench); release the lease or run 'qm unload a --force' to revoke it\n",
  });
  expect(await qm()).toEqual({
    code: 1,
    out: "",
    err: "qm: POST /api/models/unload: 409 cannot unload: a is leased; 'qm unload --force' revokes the leases\n",
  });
  expect(await qm("a", "--force")).toEqual({ code: 0, out: "unloading a\n", err: "" });
  expect(seen.at(-1)).toBe("POST /api/models/a/unload?force=true");
});
