/**
 * A command runner that answers from recorded outputs (tests/fixtures/platform/), so the
 * Darwin paths run on any box: each command line maps to a fixture file, an inline text, or
 * "missing" (the program is not installed). Every command asked is logged, and one nobody
 * recorded fails the test that asked it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { CommandOutput, CommandRunner } from "../../src/platform/index.ts";

export const FIXTURES = join(import.meta.dir, "../fixtures/platform");

export function fixture(path: string): string {
  return readFileSync(join(FIXTURES, path), "utf8");
}

export type Answer = { file: string; code?: number } | { text: string; code?: number } | "missing";

const ONE_PID = /^ps -o pid=,ppid=,pgid=,stat=,lstart=,comm= -p (\d+)$/;

export class RecordedCommands implements CommandRunner {
  readonly asked: string[] = [];

  /**
   * `table`: a recorded `ps -ax` whose lines also answer `ps -o … -p PID` (the same columns;
   * ps exits 1 and prints nothing for a pid that is not there).
   */
  constructor(
    private readonly answers: Record<string, Answer>,
    public table?: string,
  ) {}

  set(line: string, answer: Answer): void {
    this.answers[line] = answer;
  }

  sync(argv: readonly string[]): CommandOutput | null {
    const line = argv.join(" ");
    this.asked.push(line);
    const one = ONE_PID.exec(line);
    if (one && this.table && this.answers[line] === undefined) {
      const row = fixture(this.table)
        .split("\n")
        .find((l) => l.trim().split(/\s+/)[0] === one[1]);
      return row ? { code: 0, stdout: `${row}\n` } : { code: 1, stdout: "" };
    }
    const a = this.answers[line];
    if (a === undefined) throw new Error(`no recorded output for \`${line}\``);
    if (a === "missing") return null;
    const stdout = "file" in a ? fixture(a.file) : a.text;
    return { code: a.code ?? 0, stdout };
  }

  async async(argv: readonly string[]): Promise<CommandOutput | null> {
    return this.sync(argv);
  }
}

/** The commands a Darwin qm runs, answered from a Mac running one llama-server model. */
export function macRunningCoder(): RecordedCommands {
  return new RecordedCommands(
    {
      "ps -o pid= -p 1": { text: "    1\n" },
      "ps -ax -o pid=,ppid=,pgid=,stat=,lstart=,comm=": { file: "darwin/ps-ax.txt" },
      "ps -o pid=,ppid=,pgid=,stat=,lstart=,comm= -p 4188": { file: "darwin/ps-p-4188.txt" },
      "ps -axwwE -o pid=,command=": { file: "darwin/ps-env.txt" },
      "lsof -nP -w -iTCP -sTCP:LISTEN -Fpcfn": { file: "darwin/lsof-listen.txt" },
      "lsof -v": { text: "" },
      "sysctl hw.memsize hw.optional.arm64 iogpu.wired_limit_mb": {
        file: "darwin/sysctl-m2max-64g.txt",
      },
    },
    "darwin/ps-ax.txt",
  );
}

/** The same Mac after that qm was SIGKILLed, as the next `qm serve` finds it. */
export function macAfterCrash(): RecordedCommands {
  return new RecordedCommands(
    {
      "ps -o pid= -p 1": { text: "    1\n" },
      "ps -ax -o pid=,ppid=,pgid=,stat=,lstart=,comm=": { file: "darwin/ps-ax-after-crash.txt" },
      "ps -axwwE -o pid=,command=": { file: "darwin/ps-env-after-crash.txt" },
    },
    "darwin/ps-ax-after-crash.txt",
  );
}
