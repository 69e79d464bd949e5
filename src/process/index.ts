export {
  describeStatus,
  type ExitReport,
  exitError,
  exitReport,
  type ProcessExit,
} from "./exit-info.ts";
export {
  ModelProcess,
  type ModelProcessOptions,
  type ProcessState,
  STDERR_TAIL_LINES,
  type StopOptions,
} from "./model-process.ts";
export { liveGroups } from "./process-group.ts";
export { killAllSync, type Supervision, startSupervision } from "./supervision.ts";
