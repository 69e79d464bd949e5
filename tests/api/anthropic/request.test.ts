/** Top-level request translation, thinking, profiles (docs/translation.md §3.1, §3.4). */
import { describe, expect, test } from "bun:test";
import { toOpenAI } from "../../../src/api/anthropic/translate/request.ts";
import {
  checkWire,
  type MessagesRequest,
  MessagesRequestSchema,
} from "../../../src/api/anthropic/wire.ts";
import { profileFromCommand } from "../../../src/api/chat/profile.ts";
import { tr } from "./translate.ts";

describe("top level", () => {
  test("plain text with a string system", () => {
    const out = tr({ system: "S", messages: [{ role: "user", content: "hi" }] });
    expect(out).toEqual({
      model: "up",
      messages: [
        { role: "system", content: "S" },
        { role: "user", content: "hi" },
      ],
      max_tokens: 100,
      stream: false,
    });
  });

  test("system blocks, billing header dropped, no cache_control anywhere", () => {
    const out = tr({
      system: [
        { type: "text", text: "x-anthropic-billing-header: cc_version=2.1; cch=ab12;" },
        { type: "text", text: "You are…", cache_control: { type: "ephemeral" } },
      ],
      messages: [
        {
          role: "user",
          content: [{ type: "text", text: "q", cache_control: { type: "ephemeral" } }],
        },
      ],
      cache_control: { type: "ephemeral" },
    });
    expect(out.messages[0]).toEqual({ role: "system", content: "You are…" });
    expect(JSON.stringify(out)).not.toContain("cache_control");
    expect(JSON.stringify(out)).not.toContain("billing");
  });

  test("streaming asks for usage; sampling kept; stop sequences (qm's to apply) and unknown fields not sent", () => {
    const out = tr({
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stop_sequences: ["END"],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      metadata: { user_id: "session-123" },
      service_tier: "auto",
      container: "c1",
      mcp_servers: [],
    });
    expect(out).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
    });
    for (const k of ["stop", "metadata", "user", "service_tier", "container", "mcp_servers"]) {
      expect(k in out).toBe(false);
    }
  });

  test("max_tokens is clamped to the cap, never below 1", () => {
    const m = [{ role: "user", content: "hi" }];
    const full = { model: "m", max_tokens: 32000, messages: m } as MessagesRequest;
    expect(
      toOpenAI(full, { profile: "generic", upstreamModel: "u", maxTokensCap: 500 }).max_tokens,
    ).toBe(500);
    expect(
      toOpenAI(full, { profile: "generic", upstreamModel: "u", maxTokensCap: 0 }).max_tokens,
    ).toBe(1);
    expect(
      toOpenAI(full, { profile: "generic", upstreamModel: "u", maxTokensCap: null }).max_tokens,
    ).toBe(32000);
  });

  test("wire errors read like Anthropic's", () => {
    expect(checkWire(MessagesRequestSchema, { model: "m", messages: [] })).toBe(
      "max_tokens: Field required",
    );
    expect(
      checkWire(MessagesRequestSchema, {
        model: "m",
        max_tokens: 1,
        messages: [{ role: "bot", content: "x" }],
      }),
    ).toStartWith("messages.0.role:");
    // Stop sequences are matched by qm against the text, so they are bounded.
    const stops = (stop_sequences: string[]) =>
      checkWire(MessagesRequestSchema, { model: "m", max_tokens: 1, messages: [], stop_sequences });
    expect(stops(["a".repeat(1025)])).toStartWith("stop_sequences.0:");
    expect(stops(Array.from({ length: 65 }, (_, i) => `s${i}`))).toStartWith("stop_sequences:");
    expect(stops(["a".repeat(1024)])).toBeNull();
  });

  test("thinking options per profile, output_config effort and format", () => {
    const m = [{ role: "user", content: "hi" }];
    expect(tr({ messages: m, thinking: { type: "disabled" } }, "llamacpp")).toMatchObject({
      chat_template_kwargs: { enable_thinking: false },
      thinking_budget_tokens: 0,
    });
    expect(
      tr({ messages: m, thinking: { type: "enabled", budget_tokens: 2048 } }, "llamacpp"),
    ).toMatchObject({
      chat_template_kwargs: { enable_thinking: true },
      thinking_budget_tokens: 2048,
    });
    const v = tr({ messages: m, thinking: { type: "enabled", budget_tokens: 20000 } }, "vllm");
    expect(v.reasoning_effort).toBe("high");
    expect(v.thinking_budget_tokens).toBeUndefined();
    const fmt = tr({
      messages: m,
      output_config: { effort: "max", format: { type: "json_schema", schema: { type: "object" } } },
    });
    expect(fmt.reasoning_effort).toBe("high");
    expect(fmt.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "response", schema: { type: "object" } },
    });
  });

  test("profiles come from the model command", () => {
    expect(profileFromCommand(["/opt/llama/llama-server", "-m", "x.gguf"])).toBe("llamacpp");
    expect(profileFromCommand(["vllm", "serve", "Qwen/Qwen3-8B"])).toBe("vllm");
    expect(profileFromCommand(["python", "-m", "vllm.entrypoints.openai.api_server"])).toBe("vllm");
    expect(profileFromCommand(["mistralrs-server", "--port", "1"])).toBe("mistralrs");
    expect(profileFromCommand(["qm", "demo-upstream"])).toBe("generic");
  });
});
