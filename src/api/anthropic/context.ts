import type { Timers } from "../../proxy/deadline.ts";
import type { Logger } from "../../shared/log.ts";
import type { Gateway, Lease } from "../gateway.ts";

export interface AnthropicOptions {
  /**
   * Keep-alive period of streams: a `ping` goes out when nothing else did for this long, and a
   * stream waits this long for the upstream's headers before it commits to `200` (so quick
   * upstream refusals still become HTTP errors the SDKs map to their exception classes).
   */
  pingMs: number;
  log: Logger;
  /** The clock of upstream time limits; a fake one in tests. */
  timers?: Timers;
}

/** One Anthropic request as the route hands it over. */
export interface AnthropicRequest {
  gw: Gateway;
  request: Request;
  /** Disables Bun's idle timeout for this request: a model load can take minutes. */
  noIdleTimeout: () => void;
  opts: AnthropicOptions;
}

/** A lease released once, whichever path ends the request first. */
export function releaseOnce(lease: Lease): (toolCalls: boolean) => void {
  let done = false;
  return (toolCalls) => {
    if (done) return;
    done = true;
    lease.release({ toolCalls });
  };
}

export const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };
