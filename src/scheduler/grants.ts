import type { RequestKey } from "./types.ts";

/** A request granted and not yet done: what its end must settle. */
export interface Grant {
  model: string;
  holdMs: number;
  /** Its conversation key (`conversationOf`). */
  conversation: string;
  keepAliveMs: number | undefined;
  /** The model's generation at grant time: a crash starts a new one. */
  generation: number;
  /** The key it is charged to. */
  key: RequestKey;
}

/**
 * The key a request's tool gaps are kept under: its conversation, or, without one, its model
 * (all of that model's keyless requests then count as one conversation).
 */
export function conversationOf(model: string, conversation: string | null): string {
  return conversation ?? `\u0000model ${model}`;
}

/** A conversation key as status shows it: null for a model's keyless requests. */
export function shownConversation(conversation: string | null): string | null {
  return conversation?.startsWith("\u0000") ? null : conversation;
}
