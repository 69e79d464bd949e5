export { SplitCommandError, splitCommand } from "./argv.ts";
export { parseHostPort } from "./checks.ts";
export { ConfigError, type ConfigIssue, formatIssue } from "./errors.ts";
export { type LoadOptions, loadConfigFile, loadConfigText } from "./load.ts";
export { isPortFreeOnLoopback } from "./ports.ts";
export * from "./types.ts";
export {
  contextSize,
  MAX_CTX,
  MIN_CTX,
  mintVariant,
  modelPath,
  parseVariantName,
  withContextSize,
} from "./variant.ts";
