import { CodedError, type ErrorCode } from "../util/mod.ts";

/** A failed Pool or Volume operation: a code to branch on and a one-line message naming the Volume or command. */
export class VolumeError extends CodedError {
  /** Builds an error; `details` names what was involved, `cause` keeps the underlying error for logs. */
  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(code, message, options);
    this.name = "VolumeError";
  }
}
