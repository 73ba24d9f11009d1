/** Error codes an installation reports; the same words Machine RPC and the CLI use. */
export type InstallErrorCode =
  | "invalid_argument"
  | "not_found"
  | "unsupported"
  | "unavailable"
  | "conflict"
  | "busy"
  | "internal";

/** An installation failure a person can act on: a code, a one-line message, and structured details. */
export class InstallError extends Error {
  /** The error code. */
  readonly code: InstallErrorCode;
  /** Structured details, e.g. the attempt id holding the lock. */
  readonly details: Record<string, unknown>;

  /** Makes an error with a code, a message and optional details. */
  constructor(code: InstallErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = "InstallError";
    this.code = code;
    this.details = details;
  }
}
