import { CodedError } from "../util/mod.ts";

/** The one error class of the store area. */
export class StoreError extends CodedError {
  /** Names the error. */
  override name = "StoreError";
}
