import { CodedError, type ErrorCode } from "../util/mod.ts";

/** A failed mesh operation: a code to branch on and a message that never carries key material. */
export class MeshError extends CodedError {
  /** Builds an error; `cause` keeps the underlying error for logs. */
  constructor(code: ErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = "MeshError";
  }
}
