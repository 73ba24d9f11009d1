import { CodedError, type ErrorCode } from "../util/mod.ts";

/** A refusal a caller can act on: a bad query, an ambiguous container prefix, a socket already served. */
export class ObserveError extends CodedError {
  /** Makes an error with a code, a message and optional details, e.g. the candidates of an ambiguous prefix. */
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(code, message, { details });
    this.name = "ObserveError";
  }
}
