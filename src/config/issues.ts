/**
 * Collects issues by config path and turns each path into a file position (or into the
 * `QM_*` variable that set the value), so checks only ever say *which key* is wrong.
 */
import { ConfigError, type ConfigIssue } from "./errors.ts";
import type { SourceMap } from "./locate.ts";

/** Keys are strings; array indices are numbers (shown as `[i]`). */
export type Path = readonly (string | number)[];

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

/** A path as a person would write it in TOML: `models."qwen2.5".aliases[0]`. */
export function displayPath(path: Path): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else {
      const part = BARE_KEY.test(seg) ? seg : JSON.stringify(seg);
      out += out === "" ? part : `.${part}`;
    }
  }
  return out;
}

export class Issues {
  private readonly issues: ConfigIssue[] = [];
  private readonly paths: Path[] = [];

  constructor(
    private readonly file: string,
    private readonly map: SourceMap,
    /** `section.key` → the env variable that overrode it. */
    private readonly overrides: ReadonlyMap<string, string>,
  ) {}

  at(path: Path, message: string): void {
    this.paths.push(path);
    const variable = path.length >= 2 ? this.overrides.get(`${path[0]}.${path[1]}`) : undefined;
    if (variable !== undefined) {
      this.push({ file: "env", line: 0, col: 0, key: variable, message });
      return;
    }
    const { line, col } = this.map.find(path);
    this.push({ file: this.file, line, col, key: displayPath(path), message });
  }

  env(variable: string, message: string): void {
    this.push({ file: "env", line: 0, col: 0, key: variable, message });
  }

  /** Whether any issue was reported at or below `prefix` (later checks skip such parts). */
  within(prefix: Path): boolean {
    return this.paths.some((p) => prefix.every((seg, i) => String(p[i]) === String(seg)));
  }

  get count(): number {
    return this.issues.length;
  }

  /** Throws every issue at once, env overrides first, then in file order. */
  throwIfAny(): void {
    if (this.issues.length === 0) return;
    const sorted = [...this.issues].sort(
      (a, b) => a.line - b.line || a.col - b.col || (a.line === 0 ? a.key.localeCompare(b.key) : 0),
    );
    throw new ConfigError(sorted);
  }

  private push(issue: ConfigIssue): void {
    const same = (o: ConfigIssue) =>
      o.file === issue.file &&
      o.line === issue.line &&
      o.col === issue.col &&
      o.key === issue.key &&
      o.message === issue.message;
    if (!this.issues.some(same)) this.issues.push(issue);
  }
}
