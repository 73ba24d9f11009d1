/**
 * The one error of Machine RPC: a code a caller branches on, a message a person reads, and details naming what
 * was involved (always the capability, for a refusal of a catalogued route).
 *
 * @module
 */

import { CodedError, ERROR_CODES, type ErrorCode, isErrorCode } from "../util/mod.ts";

/** The shared error codes, as Machine RPC carries them (the one union of `lib/util`). */
export type RpcErrorCode = ErrorCode;

/** Every code, for checking what arrives over the wire. */
export const RPC_ERROR_CODES: readonly RpcErrorCode[] = ERROR_CODES;

/**
 * A refused or failed Machine RPC call: `details.capability` names the route, `details.protocol_major` the major
 * a daemon speaks.
 */
export class RpcError extends CodedError {
  /** Names the error. */
  override name = "RpcError";
}

/** Whether `value` is one of the known codes. */
export function isRpcErrorCode(value: unknown): value is RpcErrorCode {
  return isErrorCode(value);
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
