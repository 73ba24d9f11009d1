import { CodedError } from "../util/mod.ts";

/** A failed lab operation: a code to branch on and a one-line message naming what to do. */
export class LabError extends CodedError {
  /** Names the error. */
  override name = "LabError";
}
