import { CodedError } from "../util/mod.ts";

/** A failed mesh operation: a code to branch on and a message that never carries key material. */
export class MeshError extends CodedError {
  /** Names the error. */
  override name = "MeshError";
}
