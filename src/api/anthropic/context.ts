import type { Logger } from "../../shared/log.ts";
import type { Timers } from "../../shared/timer.ts";
import type { Gateway } from "../gateway.ts";

export interface AnthropicOptions {
  /**
   * Keep-alive period of streams: a `ping` goes out when nothing else did for this long, and a
   * stream waits this long for the upstream's headers before it commits to `200` (so quick
   * upstream refusals still become HTTP errors the SDKs map to their exception classes).
   */
  pingMs: number;
  log: Logger;
  /** The clock of the ping timer and of that wait; a fake one in tests. */
  timers?: Timers;
}

/** One Anthropic request as the route hands it over. */
export interface AnthropicRequest {
  gw: Gateway;
  request: Request;
  opts: AnthropicOptions;
}
