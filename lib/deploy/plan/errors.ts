/**
 * The one error of planning and executing a Deploy, with the codes Machine RPC and the CLI share.
 *
 * @module
 */

/** Codes shared by the CLI, Machine RPC and every area. */
export type DeployErrorCode =
  | "invalid_argument"
  | "not_found"
  | "ambiguous"
  | "unsupported"
  | "unavailable"
  | "conflict"
  | "busy"
  | "internal"
  | "unauthenticated";

/** A Deploy that cannot be planned or a step that failed, with a code a caller can branch on. */
export class DeployError extends Error {
  /** What went wrong. */
  readonly code: DeployErrorCode;
  /** Structured context (the image, the Machine, the capability…). */
  readonly details: Record<string, unknown>;

  /** Builds an error with a code, a message and optional details. */
  constructor(code: DeployErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = "DeployError";
    this.code = code;
    this.details = details;
  }
}

/** `{code, message, details}` of any thrown value; unknown throws become `internal`. */
export function errorBody(
  error: unknown,
): { code: string; message: string; details: Record<string, unknown> } {
  if (error instanceof Error && typeof (error as { code?: unknown }).code === "string") {
    const e = error as Error & { code: string; details?: Record<string, unknown> };
    return { code: e.code, message: e.message, details: e.details ?? {} };
  }
  return { code: "internal", message: error instanceof Error ? error.message : String(error), details: {} };
}
