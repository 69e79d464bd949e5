#!/usr/bin/env bun
/**
 * The `qm` command line. Each command's module is imported when that command runs: the binary
 * then evaluates only what the command uses — `qm demo-upstream` (a model server qm starts on
 * every swap of the demo models) and `qm status` start in a fraction of the time `qm serve`'s
 * whole module graph would take, and `qm serve` does not carry the other commands' modules.
 */
import { versionLine } from "../version.ts";
import { parse, UsageError } from "./args.ts";
import { MAIN_HELP, VERSION_HELP } from "./help.ts";

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
    case "serve": {
      // Before anything else: this may replace the process (src/cli/fetch-limit.ts).
      const fetchLimit = (await import("./fetch-limit.ts")).raiseFetchLimit();
      return (await import("./serve.ts")).serveCommand(rest, fetchLimit);
    }
    case "status":
      return (await import("./client.ts")).statusCommand(rest);
    case "load":
      return (await import("./client.ts")).loadCommand(rest);
    case "logs":
      return (await import("./client.ts")).logsCommand(rest);
    case "unload":
      return (await import("./client.ts")).unloadCommand(rest);
    case "config":
      return (await import("./config.ts")).configCommand(rest);
    case "version":
    case "--version":
      return versionCommand(rest);
    case "scan":
      return (await import("../gpu/gguf/index.ts")).scanCommand(rest);
    case "doctor":
      return (await import("./doctor/command.ts")).doctorCommand(rest);
    case "import":
      return (await import("./import/command.ts")).importCommand(rest);
    case "keys":
      return (await import("./keys.ts")).keysCommand(rest);
    case "selftest":
      return (await import("./selftest/command.ts")).selftestCommand(rest);
    case "demo-smi":
      return (await import("./selftest/demo-smi.ts")).demoSmiCommand(rest);
    case "demo-upstream":
      await (await import("../demo/index.ts")).runDemoUpstream(rest);
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
