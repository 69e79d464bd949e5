/**
 * Every way a config can be wrong is reported as one `ConfigError` holding *all* issues,
 * so `qm config check` shows the whole list at once instead of one fix-and-retry round each.
 */

export interface ConfigIssue {
  /** The config file, or `env` for a bad `QM_<SECTION>__<KEY>` override. */
  file: string;
  /** 1-based; 0 when there is no position (env overrides, unreadable file). */
  line: number;
  /** 1-based; 0 when there is no position. */
  col: number;
  /** Dotted key as written in TOML (`models.qwen-7b.ttl_s`), the env variable, or "". */
  key: string;
  message: string;
}

/** `FILE:LINE:COL: KEY: message`, dropping the parts an issue does not have. */
export function formatIssue(issue: ConfigIssue): string {
  const where = issue.line > 0 ? `${issue.file}:${issue.line}:${issue.col}` : issue.file;
  return issue.key === ""
    ? `${where}: ${issue.message}`
    : `${where}: ${issue.key}: ${issue.message}`;
}

export class ConfigError extends Error {
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    // The message is the formatted list so an uncaught ConfigError still reads well.
    super(issues.map(formatIssue).join("\n"));
    this.name = "ConfigError";
    this.issues = issues;
  }

  /** One line per issue: `FILE:LINE:COL: KEY: message`. */
  format(): string {
    return this.issues.map(formatIssue).join("\n");
  }
}
