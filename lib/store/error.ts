/** Codes a {@linkcode StoreError} carries, so callers can branch without parsing messages. */
export type StoreErrorCode =
  | "invalid_argument"
  | "not_found"
  | "conflict"
  | "unavailable"
  | "internal"
  | "unauthenticated";

/** The one error class of the store area. */
export class StoreError extends Error {
  /** Machine-readable reason. */
  readonly code: StoreErrorCode;

  /** Builds an error with a code and a sentence-case message. */
  constructor(code: StoreErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StoreError";
    this.code = code;
  }
}
