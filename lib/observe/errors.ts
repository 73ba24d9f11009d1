/** Codes an Observe Store refusal carries, as Machine RPC names them. */
export type ObserveErrorCode =
  | "invalid_argument"
  | "not_found"
  | "ambiguous"
  | "unavailable"
  | "conflict"
  | "internal";

/** A refusal a caller can act on: a bad query, an ambiguous container prefix, a socket already served. */
export class ObserveError extends Error {
  /** The error code. */
  readonly code: ObserveErrorCode;
  /** Structured details, e.g. the candidates of an ambiguous prefix. */
  readonly details: Record<string, unknown>;

  /** Makes an error with a code, a message and optional details. */
  constructor(code: ObserveErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = "ObserveError";
    this.code = code;
    this.details = details;
  }
}
