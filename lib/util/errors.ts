/**
 * The one set of error codes the CLI, Machine RPC and every area share, and the coded error every area's error
 * class extends, so a caller branches on `instanceof CodedError` and `code`, never on a message.
 *
 * @module
 */

/** What went wrong, in terms a caller can act on. */
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

/** Every code, for checking what arrives over the wire. */
export const ERROR_CODES: readonly ErrorCode[] = Object.freeze([
  "invalid_argument",
  "not_found",
  "ambiguous",
  "unsupported",
  "unavailable",
  "conflict",
  "busy",
  "internal",
  "unauthenticated",
]);

/** Whether `value` is one of the known codes. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && (ERROR_CODES as readonly string[]).includes(value);
}

/** Options of {@linkcode CodedError}. */
export interface CodedErrorOptions {
  /** Structured context naming what was involved; never secrets. */
  details?: Record<string, unknown>;
  /** The underlying error, kept for logs. */
  cause?: unknown;
}

/** A failure with a code a caller can branch on and a one-line message a person reads. */
export class CodedError extends Error {
  /** What went wrong. */
  readonly code: ErrorCode;
  /** Structured context (the file, the Machine, the capability…). */
  readonly details: Record<string, unknown>;

  /** Builds an error with a code, a message and optional details and cause. */
  constructor(code: ErrorCode, message: string, options: CodedErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "CodedError";
    this.code = code;
    this.details = { ...options.details };
  }
}

/** The message of a thrown value: an `Error`'s message, anything else as text (a library may throw a string). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
