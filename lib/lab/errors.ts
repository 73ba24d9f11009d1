import { CodedError, type ErrorCode } from "../util/mod.ts";

/** A failed lab operation: a code to branch on and a one-line message naming what to do. */
export class LabError extends CodedError {
  /** Builds an error; `cause` keeps the underlying error. */
  constructor(code: ErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = "LabError";
  }
}
