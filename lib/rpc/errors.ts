/**
 * The one error of Machine RPC: a code a caller branches on, a message a person reads, and details naming what
 * was involved (always the capability, for a refusal of a catalogued route).
 *
 * @module
 */

/** Error codes shared by the CLI, Machine RPC and every area (ARCHITECTURE.md §5). */
export type RpcErrorCode =
  | "invalid_argument"
  | "not_found"
  | "ambiguous"
  | "unsupported"
  | "unavailable"
  | "conflict"
  | "busy"
  | "internal"
  | "unauthenticated";

/** Every code, for checking what arrives over the wire. */
export const RPC_ERROR_CODES: readonly RpcErrorCode[] = Object.freeze([
  "invalid_argument",
  "not_found",
  "ambiguous",
  "unsupported",
  "unavailable",
  "conflict",
  "busy",
  "internal",
  "unauthenticated",
]);

/** A refused or failed Machine RPC call. */
export class RpcError extends Error {
  /** What went wrong, in terms a caller can act on. */
  readonly code: RpcErrorCode;
  /** Structured context; `capability` names the route, `protocol_major` the major a daemon speaks. */
  readonly details: Record<string, unknown>;

  /** Builds an error with a code, a message and optional details. */
  constructor(
    code: RpcErrorCode,
    message: string,
    options: { details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RpcError";
    this.code = code;
    this.details = { ...options.details };
  }
}

/** Whether `value` is one of the known codes. */
export function isRpcErrorCode(value: unknown): value is RpcErrorCode {
  return typeof value === "string" && (RPC_ERROR_CODES as readonly string[]).includes(value);
}

const STATUS: Record<RpcErrorCode, number> = {
  "invalid_argument": 400,
  unauthenticated: 401,
  "not_found": 404,
  unsupported: 404,
  conflict: 409,
  ambiguous: 409,
  busy: 429,
  internal: 500,
  unavailable: 503,
};

/** The HTTP status an error code is answered with. Clients branch on the code, never on the status. */
export function httpStatusOf(code: RpcErrorCode): number {
  return STATUS[code];
}
