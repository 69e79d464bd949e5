#!/usr/bin/env bun
import { runDemoUpstream } from "../demo/index.ts";
import { scanCommand } from "../gpu/gguf/index.ts";
import { versionLine } from "../version.ts";
import { parse, UsageError } from "./args.ts";
import { loadCommand, logsCommand, statusCommand, unloadCommand } from "./client.ts";
import { configCommand } from "./config.ts";
import { doctorCommand } from "./doctor/command.ts";
import { MAIN_HELP, VERSION_HELP } from "./help.ts";
import { importCommand } from "./import/command.ts";
import { keysCommand } from "./keys.ts";
import { selftestCommand } from "./selftest/command.ts";
import { demoSmiCommand } from "./selftest/demo-smi.ts";
import { serveCommand } from "./serve.ts";

function versionCommand(argv: string[]): number {
  const { values } = parse(argv, {}, false);
  if (values.help) {
    process.stdout.write(VERSION_HELP);
    return 0;
  }
  process.stdout.write(`${versionLine()}\n`);
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
    case "logs":
      return logsCommand(rest);
    case "unload":
      return unloadCommand(rest);
    case "config":
      return configCommand(rest);
    case "version":
    case "--version":
      return versionCommand(rest);
    case "scan":
      return scanCommand(rest);
    case "doctor":
      return doctorCommand(rest);
    case "import":
      return importCommand(rest);
    case "keys":
      return keysCommand(rest);
    case "selftest":
      return selftestCommand(rest);
    case "demo-smi":
      return demoSmiCommand(rest);
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
