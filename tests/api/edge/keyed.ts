/**
 * qm with keys, in-process: the real runtime (scheduler, waiters, leases, events, activity,
 * usage) behind the real edge and routes, over model supervisors that start and stop at once
 * and one fake upstream that answers every model's chat, completions and embeddings calls, with
 * the prompt echoed back (so a test can look for another key's words). No socket, no process.
 */
import type { RuntimeOptions } from "../../../src/runtime/assemble.ts";
import { Runtime } from "../../../src/runtime/runtime.ts";
import type { ProcessFactory } from "../../../src/runtime/swap-runner.ts";
import { FakeServer } from "../../runtime/fake-server.ts";
import { config } from "../../support/config.ts";
import { FakeFetch, jsonOf } from "../../support/fake-fetch.ts";
import { FakeTimers } from "../../support/fake-timers.ts";
import { type App, appOf, quietLog } from "../../support/in-process.ts";
import { chunk, sseResponse, sseText } from "../../support/openai-answers.ts";

export const UPSTREAM = "http://upstream.test";

/** Starts and stops at once. */
class InstantServer extends FakeServer {
  override start(): Promise<void> {
    const started = super.start();
    if (this.state === "starting") this.ready();
    return started;
  }

  override stop(): Promise<void> {
    const stopped = super.stop();
    if (this.state === "stopping") this.stopped();
    return stopped;
  }
}

const instant: ProcessFactory = (model, onExit) => new InstantServer(model, onExit);

/** `[models.ID]` on the fake upstream; every model in one group that swaps nothing. */
export function modelsToml(models: Record<string, string>): string {
  const ids = Object.keys(models);
  const tables = ids.map(
    (id) =>
      `[models.${JSON.stringify(id)}]\ncmd = "llama-server -m /models/${id}.gguf"\nproxy = "${UPSTREAM}"\ncheck_endpoint = "none"\n${models[id]}\n`,
  );
  return `[resources]\ngpu_probe = "off"\n\n[groups.all]\nmembers = ${JSON.stringify(ids)}\nswap = false\nexclusive = false\n\n${tables.join("\n")}`;
}

/** What the fake upstream answers: the last user message echoed, with usage. */
function answer() {
  return (sent: ReturnType<FakeFetch["last"]>): Response => {
    const body = sent.body.length > 0 ? jsonOf(sent) : {};
    if (sent.path.startsWith("/v1/embeddings")) {
      return Response.json({
        object: "list",
        data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }],
        usage: { prompt_tokens: 3, total_tokens: 3 },
      });
    }
    const messages = (body.messages ?? []) as { content?: unknown }[];
    const echo = `echo: ${JSON.stringify(messages.at(-1)?.content ?? body.prompt ?? "")}`;
    const usage = { prompt_tokens: 11, completion_tokens: 7 };
    if (body.stream === true) {
      return sseResponse(
        sseText([
          chunk({ role: "assistant", content: echo }),
          chunk({}, "stop"),
          { id: "c", object: "chat.completion.chunk", choices: [], usage },
        ]),
      );
    }
    return Response.json({
      id: "chatcmpl-1",
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: echo }, finish_reason: "stop" }],
      usage,
    });
  };
}

export interface Keyed {
  rt: Runtime;
  app: App;
  up: FakeFetch;
  /** Rewrites the config "on disk"; `rt.reloadConfig()` then reads it. */
  write(text: string): void;
  /** A request with `Authorization: Bearer KEY` (no key: none sent). */
  send(
    key: string | null,
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Response>;
}

export function keyedQm(text: string, opts: Partial<RuntimeOptions> = {}): Keyed {
  let current = text;
  const up = new FakeFetch(UPSTREAM);
  up.answer = answer();
  const timers = new FakeTimers();
  const rt = new Runtime(config(current), {
    clock: timers,
    timers,
    log: quietLog(),
    makeProcess: instant,
    fetch: up.fetch,
    loadConfig: (isPortFree) => config(current, { isPortFree }),
    ...opts,
  });
  const app = appOf(rt);
  return {
    rt,
    app,
    up,
    write: (next) => {
      current = next;
    },
    send: async (key, method, path, body, headers = {}) =>
      app.handle(
        new Request(`http://localhost${path}`, {
          method,
          headers: {
            ...(body === undefined ? {} : { "content-type": "application/json" }),
            ...(key === null ? {} : { authorization: `Bearer ${key}` }),
            ...headers,
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      ),
  };
}
