/** The self-test's verdicts: one per check, `{name, ok, detail}`, in the order they ran. */

export interface Verdict {
  name: string;
  ok: boolean;
  detail: string;
}

export class Verdicts {
  readonly list: Verdict[] = [];

  get ok(): boolean {
    return this.list.length > 0 && this.list.every((v) => v.ok);
  }

  pass(name: string, detail: string): void {
    this.list.push({ name, ok: true, detail });
  }

  fail(name: string, detail: string): void {
    this.list.push({ name, ok: false, detail });
  }

  /** Runs one check; an error it throws is its failure. */
  async check(name: string, run: () => Promise<{ ok: boolean; detail: string }>): Promise<boolean> {
    try {
      const v = await run();
      this.list.push({ name, ...v });
      return v.ok;
    } catch (err) {
      this.fail(name, err instanceof Error ? err.message : String(err));
      return false;
    }
  }

  /** Checks that could not run, each failed with why. */
  skipped(names: readonly string[], why: string): void {
    for (const name of names) this.fail(name, `not run: ${why}`);
  }
}

const MARK = { pass: "✓", fail: "✗" };

export function renderVerdicts(list: readonly Verdict[]): string {
  const lines = list.map((v) => `${v.ok ? MARK.pass : MARK.fail} ${v.name}: ${v.detail}`);
  const failed = list.filter((v) => !v.ok).length;
  lines.push(
    failed === 0 ? `all ${list.length} checks passed` : `${failed} of ${list.length} checks failed`,
  );
  return `${lines.join("\n")}\n`;
}
