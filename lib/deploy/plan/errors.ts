/**
 * The one error of planning and executing a Deploy, with the codes Machine RPC and the CLI share.
 *
 * @module
 */

import { CodedError, type ErrorCode, messageOf } from "../../util/mod.ts";

/** A Deploy that cannot be planned or a step that failed, with a code a caller can branch on. */
export class DeployError extends CodedError {
  /** Builds an error with a code, a message and optional details (the image, the Machine, the capability…). */
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(code, message, { details });
    this.name = "DeployError";
  }
}

/** `{code, message, details}` of any thrown value; an error without a shared code becomes `internal`. */
export function errorBody(
  error: unknown,
): { code: string; message: string; details: Record<string, unknown> } {
  if (error instanceof CodedError) {
    return { code: error.code, message: error.message, details: error.details };
  }
  return { code: "internal", message: messageOf(error), details: {} };
}
