/**
 * The official Anthropic SDKs (current 1.x and a pinned 0.x, whose auth headers and
 * `anthropic-version` differ) pointed at an in-process app through their `fetch` option: real
 * client parsing and error mapping without a socket.
 */
import Anthropic1 from "@anthropic-ai/sdk";
import Anthropic0 from "anthropic-sdk-0";

export type AnyAnthropic = Anthropic1 | Anthropic0;

interface Handles {
  handle(r: Request): Promise<Response> | Response;
}

export const SDKS = [
  ["sdk 1.x", Anthropic1],
  ["sdk 0.x", Anthropic0],
] as const;

export function clientFor(
  Sdk: typeof Anthropic1 | typeof Anthropic0,
  app: Handles,
  apiKey = "k",
): Anthropic1 {
  const client = new Sdk({
    apiKey,
    baseURL: "http://localhost",
    maxRetries: 0,
    fetch: async (input: string | URL | Request, init?: RequestInit) =>
      app.handle(new Request(input as string, init)),
  });
  // Both versions have the same surface for what the tests call.
  return client as Anthropic1;
}
