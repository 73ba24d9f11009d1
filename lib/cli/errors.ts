/** Error codes shared by the CLI, Machine RPC and every area (ARCHITECTURE.md §5). */
export type ErrorCode =
  | "invalid_argument"
  | "not_found"
  | "ambiguous"
  | "unsupported"
  | "unavailable"
  | "conflict"
  | "busy"
  | "internal"
  | "unauthenticated";

/**
 * A failure a person can act on: printed as one line with its code, never with a stack trace.
 * `exitCode` is 2 for usage mistakes and 1 otherwise.
 */
export class CliError extends Error {
  /** The error code, as Machine RPC uses it. */
  readonly code: ErrorCode;
  /** The process exit code. */
  readonly exitCode: number;
  /** Structured details, e.g. the refused capability. */
  readonly details: Record<string, unknown>;

  /** Makes an error with a code, a message, and optionally an exit code and details. */
  constructor(
    code: ErrorCode,
    message: string,
    options: { exitCode?: number; details?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = "CliError";
    this.code = code;
    this.exitCode = options.exitCode ?? 1;
    this.details = options.details ?? {};
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
