import { describe, expect, test } from "bun:test";
import { readBody } from "../../../src/api/request/body.ts";
import { QmError } from "../../../src/shared/errors.ts";
import { Sweep } from "../../../src/shared/sweep.ts";
import { FakeTimers } from "../../support/fake-timers.ts";

function streamed(parts: Uint8Array[], then: "end" | "hang" | "break"): Request {
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const p of parts) c.enqueue(p);
      if (then === "end") c.close();
      if (then === "break") c.error(new TypeError("bad chunk size"));
    },
  });
  return new Request("http://localhost/", { method: "POST", body, duplex: "half" } as RequestInit);
}

const bytes = (n: number) => new Uint8Array(n).fill(65);

describe("readBody", () => {
  test("reads a streamed body whole", async () => {
    const got = await readBody(streamed([bytes(3), bytes(4)], "end"), 100);
    expect(got.byteLength).toBe(7);
  });

  test("a declared length over the limit is refused before reading; a streamed one at the limit", async () => {
    const declared = new Request("http://localhost/", {
      method: "POST",
      headers: { "content-length": "1000" },
      body: "x",
    });
    await expect(readBody(declared, 10)).rejects.toMatchObject({ status: 413 });
    await expect(readBody(streamed([bytes(8), bytes(8)], "end"), 10)).rejects.toMatchObject({
      status: 413,
    });
  });

  test("a body that stops arriving is a 408, not a wait for ever", async () => {
    const timers = new FakeTimers();
    const sweep = new Sweep(timers, 1);
    let settled = false;
    const pending = readBody(streamed([bytes(2)], "hang"), 100, 5000, sweep).catch(
      (e: unknown) => e,
    );
    void pending.then(() => {
      settled = true;
    });
    // The first chunk arrives and is taken; from then on nothing does.
    await new Promise((r) => setImmediate(r));
    timers.advance(4999);
    await Promise.resolve();
    expect(settled).toBe(false);
    timers.advance(1);
    const err = await pending;
    expect(err).toBeInstanceOf(QmError);
    expect((err as QmError).status).toBe(408);
    expect((err as QmError).message).toBe("the request body stopped arriving (nothing for 5 s)");
    expect(sweep.size).toBe(0);
  });

  test("broken framing is a 400 in qm's words", async () => {
    const err = await readBody(streamed([bytes(2)], "break"), 100).catch((e: unknown) => e);
    expect((err as QmError).status).toBe(400);
    expect((err as QmError).message).not.toContain("bad chunk size");
  });
});
