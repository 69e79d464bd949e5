#!/usr/bin/env bun
import { runDemoUpstream } from "../demo/index.ts";
import { scanCommand } from "../gpu/gguf/index.ts";
import { VERSION } from "../version.ts";
import { parse, UsageError } from "./args.ts";
import { loadCommand, statusCommand, unloadCommand } from "./client.ts";
import { configPath, loadForCli } from "./config-path.ts";
import { CONFIG_HELP, MAIN_HELP, VERSION_HELP } from "./help.ts";
import { serveCommand } from "./serve.ts";

async function configCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === "--help" || sub === "-h" || sub === undefined) {
    process.stdout.write(CONFIG_HELP);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== "check") throw new UsageError(`unknown config command "${sub}"`);
  const { values } = parse(rest, { config: { type: "string", short: "c" } }, false);
  if (values.help) {
    process.stdout.write(CONFIG_HELP);
    return 0;
  }
  const path = configPath(values.config);
  const loaded = loadForCli(path);
  if (!loaded.ok) {
    process.stderr.write(`${loaded.message}\n`);
    return 1;
  }
  const n = Object.keys(loaded.config.models).length;
  process.stdout.write(`${path}: ok (${n} model${n === 1 ? "" : "s"})\n`);
  return 0;
}

function versionCommand(argv: string[]): number {
  const { values } = parse(argv, {}, false);
  if (values.help) {
    process.stdout.write(VERSION_HELP);
    return 0;
  }
  process.stdout.write(`qm ${VERSION} (bun ${Bun.version})\n`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(MAIN_HELP);
      return command === undefined ? 2 : 0;
    case "serve":
      return serveCommand(rest);
    case "status":
      return statusCommand(rest);
    case "load":
      return loadCommand(rest);
    case "unload":
      return unloadCommand(rest);
    case "config":
      return configCommand(rest);
    case "version":
    case "--version":
      return versionCommand(rest);
    case "scan":
      return scanCommand(rest);
    case "demo-upstream":
      await runDemoUpstream(rest);
      return typeof process.exitCode === "number" ? process.exitCode : 0;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof UsageError) {
      process.stderr.write(`qm: ${err.message}\nRun 'qm --help' for usage.\n`);
      process.exit(2);
    }
    process.stderr.write(`qm: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
