import { CodedError, type ErrorCode } from "../util/mod.ts";

/** An installation failure a person can act on: a code, a one-line message, and structured details. */
export class InstallError extends CodedError {
  /** Makes an error with a code, a message and optional details, e.g. the attempt id holding the lock. */
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(code, message, { details });
    this.name = "InstallError";
  }
}
