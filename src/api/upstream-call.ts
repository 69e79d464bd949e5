/**
 * What every proxied call of a model carries, whichever API it came in on: its time limits
 * (timeouts and normal ends are reported to the runtime, which restarts a model that keeps
 * stalling), and where a failure's details go — the model's stderr tail and the raw error are
 * for qm's log, while the client is told the model and a one-line cause.
 */
import type { ModelConfig } from "../config/types.ts";
import { Deadline, type Timers } from "../proxy/deadline.ts";
import { createLogger, type Logger } from "../shared/log.ts";
import type { Gateway } from "./gateway.ts";

export interface CallGuards {
  model: string;
  deadline: Deadline | null;
  stderrTail: () => string[];
  log: Logger;
}

const logs = new WeakMap<Gateway, Logger>();

/** The routes without a logger of their own log at the configured level, to stderr. */
function logOf(gw: Gateway): Logger {
  let log = logs.get(gw);
  if (!log) {
    log = createLogger(gw.config.server.logLevel);
    logs.set(gw, log);
  }
  return log;
}

/**
 * `log`: the route's own logger, if it has one; `timers`: a fake clock (tests); `mayIdle`: the
 * answer may legitimately go quiet for long (a model's own web UI or event stream fetched
 * through `/upstream/…`), so only the first-byte limit applies, and its silences are never
 * counted as a stalling model.
 */
export function callGuards(
  gw: Gateway,
  model: ModelConfig,
  opts: { log?: Logger; timers?: Timers | undefined; mayIdle?: boolean } = {},
): CallGuards {
  const id = model.id;
  const report = { stalled: () => gw.reportStall(id), answered: () => gw.reportAnswered(id) };
  const limits = opts.mayIdle ? { ...model, stallTimeoutMs: 0 } : model;
  return {
    model: id,
    deadline: Deadline.forModel(
      limits,
      opts.mayIdle ? undefined : report,
      opts.timers,
      gw.cutSignal,
    ),
    stderrTail: () => gw.stderrTail(id),
    log: opts.log ?? logOf(gw),
  };
}
