import { CodedError } from "../util/mod.ts";

/** A failed Pool or Volume operation: a code to branch on and a one-line message naming the Volume or command. */
export class VolumeError extends CodedError {
  /** Names the error. */
  override name = "VolumeError";
}
