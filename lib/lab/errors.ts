/** What went wrong in a lab operation. */
export type LabErrorCode =
  | "invalid_argument"
  | "not_found"
  | "conflict"
  | "unavailable"
  | "unsupported"
  | "internal";

/** A failed lab operation: a code to branch on and a one-line message naming what to do. */
export class LabError extends Error {
  /** What went wrong. */
  readonly code: LabErrorCode;

  /** Builds an error; `cause` keeps the underlying error. */
  constructor(code: LabErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "LabError";
    this.code = code;
  }
}
