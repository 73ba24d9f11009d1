import { CodedError } from "../../util/mod.ts";
import { MAX_LISTED_ISSUES } from "./limits.ts";

/** One problem found in a Compose file, located precisely enough for an operator to fix it. */
export interface ComposeIssue {
  /** The file the problem is in, as the caller named it (a compose file or an env_file). */
  file: string;
  /** 1-based line, or 0 when the problem has no position (for example a missing file). */
  line: number;
  /** 1-based column, or 0 when the problem has no position. */
  column: number;
  /** Dotted key path inside the file, such as `services.web.ports[0]`; empty for the whole file. */
  path: string;
  /** What is wrong, in sentence case with quoted values. */
  message: string;
}

/** Renders an issue as `file:line:col: path: message`, leaving out the parts it does not have. */
export function formatIssue(issue: ComposeIssue): string {
  const where = issue.line > 0 ? `${issue.file}:${issue.line}:${issue.column}` : issue.file;
  return issue.path === "" ? `${where}: ${issue.message}` : `${where}: ${issue.path}: ${issue.message}`;
}

/**
 * A Compose file that cannot be loaded. It lists every problem found, so the CLI can print them all at
 * once instead of making the operator fix them one by one.
 */
export class ComposeError extends CodedError {
  /** Every problem found, in file order. */
  readonly issues: readonly ComposeIssue[];

  /** Builds the error from a non-empty list of issues. */
  constructor(file: string, issues: readonly ComposeIssue[]) {
    const count = issues.length === 1 ? "1 problem" : `${issues.length} problems`;
    // A hostile file can hold thousands of problems; the first ones are enough to start fixing it.
    const listed = issues.slice(0, MAX_LISTED_ISSUES).map(formatIssue);
    if (issues.length > MAX_LISTED_ISSUES) {
      listed.push(`… and ${issues.length - MAX_LISTED_ISSUES} more problems`);
    }
    // Always `invalid_argument`: these are mistakes in the operator's input.
    super("invalid_argument", [`Cannot load compose file "${file}": ${count}`, ...listed].join("\n"));
    this.name = "ComposeError";
    this.issues = issues;
  }
}
