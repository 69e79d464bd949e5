/**
 * The demo upstream's ways of breaking that a proxy must survive: a server that never answers,
 * one that goes silent mid-answer, and streams that end broken. Served in-process on port 0.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { DEFAULT_DEMO_OPTIONS, type DemoOptions } from "../../src/demo/flags.ts";
import { type DemoServer, startDemoServer } from "../../src/demo/server.ts";

const servers: DemoServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

function demo(over: Partial<DemoOptions>): DemoServer {
  const s = startDemoServer(
    { ...DEFAULT_DEMO_OPTIONS, name: "d", tokenMs: 0, tokens: 6, ...over },
    { crash: () => {} },
  );
  servers.push(s);
  return s;
}

const chat = { model: "d", messages: [{ role: "user", content: "hi" }] };

function post(s: DemoServer, body: unknown, signal?: AbortSignal, path = "/v1/chat/completions") {
  return fetch(s.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: signal ?? null,
  });
}

/** Everything that arrives until the body ends or `signal` cuts it. */
async function readUntilCut(res: Response): Promise<{ text: string; cut: boolean }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, cut: false };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, cut: true };
  }
}

const dataLines = (text: string) => text.split("\n").filter((l) => l.startsWith("data: "));

describe("a server that hangs", () => {
  test("--hang-before-headers: the request is taken and never answered", async () => {
    const s = demo({ hangBeforeHeaders: true });
    const res = post(s, chat, AbortSignal.timeout(150));
    expect(res).rejects.toThrow();
    await res.catch(() => {});
    // Only inference hangs: the server itself stays healthy.
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  });

  test("--stall-after-tokens: a stream goes silent after N tokens, connection open", async () => {
    const s = demo({ stallAfterTokens: 2 });
    const res = await post(s, { ...chat, stream: true }, AbortSignal.timeout(300));
    expect(res.status).toBe(200);
    const { text, cut } = await readUntilCut(res);
    expect(cut).toBe(true);
    // The role chunk and two tokens, then nothing: no finish, no [DONE].
    expect(dataLines(text)).toHaveLength(3);
    expect(text).toContain('"content":" I"');
    expect(text).not.toContain('finish_reason":"stop');
    expect(text).not.toContain("[DONE]");
  });

  test("--stall-after-tokens: a JSON answer sends its headers and half its body", async () => {
    const s = demo({ stallAfterTokens: 0 });
    const res = await post(s, chat, AbortSignal.timeout(300));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const { text, cut } = await readUntilCut(res);
    expect(cut).toBe(true);
    expect(text.startsWith('{"id":"chatcmpl-demo-')).toBe(true);
    expect(() => JSON.parse(text)).toThrow();
  });
});

describe("--bad-sse", () => {
  test("no-done: the stream ends cleanly after its finish chunk, without [DONE]", async () => {
    for (const path of ["/v1/chat/completions", "/v1/completions"]) {
      const { text, cut } = await readUntilCut(
        await post(
          demo({ badSse: "no-done" }),
          { ...chat, prompt: "x", stream: true },
          undefined,
          path,
        ),
      );
      expect(cut).toBe(false);
      expect(text).toContain('"finish_reason":"stop"');
      expect(text).not.toContain("[DONE]");
      expect(text.endsWith("\n\n")).toBe(true);
    }
  });

  test("mid-event: the stream stops in the middle of its finish chunk", async () => {
    const { text, cut } = await readUntilCut(
      await post(demo({ badSse: "mid-event" }), { ...chat, stream: true }),
    );
    expect(cut).toBe(false);
    const last = text.slice(text.lastIndexOf("\n\n") + 2);
    expect(last.startsWith("data: {")).toBe(true);
    expect(text).not.toContain("[DONE]");
  });

  test("not-json: a data line that is not JSON, then [DONE]", async () => {
    const { text } = await readUntilCut(
      await post(demo({ badSse: "not-json" }), { ...chat, stream: true }),
    );
    const lines = dataLines(text);
    expect(lines.at(-2)).toBe("data: upstream error: out of memory");
    expect(lines.at(-1)).toBe("data: [DONE]");
  });
});
