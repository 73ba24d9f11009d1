import { CodedError, type ErrorCode } from "../util/mod.ts";

/** The one error class of the store area. */
export class StoreError extends CodedError {
  /** Builds an error with a code and a sentence-case message. */
  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, { cause: options?.cause });
    this.name = "StoreError";
  }
}
