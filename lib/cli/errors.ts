import { CodedError, type ErrorCode } from "../util/mod.ts";

/**
 * A failure a person can act on: printed as one line with its code, never with a stack trace.
 * `exitCode` is 2 for usage mistakes and 1 otherwise.
 */
export class CliError extends CodedError {
  /** The process exit code. */
  readonly exitCode: number;

  /** Makes an error with a code, a message, and optionally an exit code and details. */
  constructor(
    code: ErrorCode,
    message: string,
    options: { exitCode?: number; details?: Record<string, unknown> } = {},
  ) {
    super(code, message, { details: options.details });
    this.name = "CliError";
    this.exitCode = options.exitCode ?? 1;
  }
}

/** A command line that cannot be understood; prints the usage and exits 2. */
export class UsageError extends CliError {
  /** Makes a usage error with its message. */
  constructor(message: string) {
    super("invalid_argument", message, { exitCode: 2 });
    this.name = "UsageError";
  }
}
