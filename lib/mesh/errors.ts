/** What went wrong in a mesh operation, in terms a caller can act on. */
export type MeshErrorCode =
  | "invalid_argument"
  | "not_found"
  | "conflict"
  | "unavailable"
  | "unsupported"
  | "internal";

/** A failed mesh operation: a code to branch on and a message that never carries key material. */
export class MeshError extends Error {
  /** What went wrong. */
  readonly code: MeshErrorCode;

  /** Builds an error; `cause` keeps the underlying error for logs. */
  constructor(code: MeshErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "MeshError";
    this.code = code;
  }
}
