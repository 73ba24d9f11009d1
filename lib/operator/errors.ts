import { CodedError, type ErrorCode } from "../util/mod.ts";

/** A failure the operator can act on: a code, a one-line message naming the context and host, and details. */
export class OperatorError extends CodedError {
  /** Makes an error with a code, a message and optional details. */
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(code, message, { details });
    this.name = "OperatorError";
  }
}

/** The refusal of a Machine name that several Machines hold, naming their ids: the operator gives an id instead. */
export function ambiguousMachine(wanted: string, ids: readonly string[]): OperatorError {
  return new OperatorError(
    "ambiguous",
    `Machine name "${wanted}" is held by ${ids.length} Machines (${ids.join(", ")}): give the id`,
    { machine: wanted },
  );
}
