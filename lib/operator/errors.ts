import { CodedError, type ErrorCode } from "../util/mod.ts";

/** A failure the operator can act on: a code, a one-line message naming the context and host, and details. */
export class OperatorError extends CodedError {
  /** Makes an error with a code, a message and optional details. */
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(code, message, { details });
    this.name = "OperatorError";
  }
}
