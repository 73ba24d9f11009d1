/**
 * The request envelope (`{ "protocol_major": 1, ...fields }`) and the error body
 * (`{ "error": { code, message, details } }`).
 *
 * @module
 */

import type { z } from "zod";
import { PROTOCOL_MAJOR } from "./catalog.ts";
import { RpcError } from "./errors.ts";
import type { ErrorBody } from "./wire.ts";

/** Wraps request fields in the envelope. */
export function envelope(fields: object): Record<string, unknown> {
  return { "protocol_major": PROTOCOL_MAJOR, ...fields };
}

/**
 * Checks the envelope of a parsed request body and its fields against the route's strict schema. Throws
 * `unsupported` (with `details.protocol_major`) for another major and `invalid_argument` naming the field for
 * anything malformed.
 */
export function openEnvelope<T>(body: unknown, schema: z.ZodType<T>, capability: string): T {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new RpcError(
      "invalid_argument",
      `Invalid request to "${capability}": the body must be a JSON object`,
      {
        details: { capability },
      },
    );
  }
  const { "protocol_major": major, ...fields } = body as Record<string, unknown>;
  if (major === undefined) {
    throw new RpcError(
      "invalid_argument",
      `Invalid request to "${capability}": field "protocol_major" is missing`,
      {
        details: { capability, field: "protocol_major" },
      },
    );
  }
  if (major !== PROTOCOL_MAJOR) {
    throw new RpcError(
      "unsupported",
      `Unsupported protocol major ${JSON.stringify(major)}: this Machine speaks ${PROTOCOL_MAJOR}`,
      { details: { capability, "protocol_major": PROTOCOL_MAJOR } },
    );
  }
  const parsed = schema.safeParse(fields);
  if (!parsed.success) throw invalidRequest(capability, parsed.error);
  return parsed.data;
}

/** Turns zod issues into one `invalid_argument` naming the first offending field. */
export function invalidRequest(capability: string, error: z.ZodError): RpcError {
  const issue = error.issues[0];
  let field = issue.path.map(String).join(".");
  let why = issue.message;
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0];
    field = field === "" ? key : `${field}.${key}`;
    why = "unknown field";
  }
  const message = field === ""
    ? `Invalid request to "${capability}": ${why}`
    : `Invalid request to "${capability}": field "${field}": ${lowerFirst(why)}`;
  return new RpcError("invalid_argument", message, { details: { capability, field } });
}

function lowerFirst(text: string): string {
  return text.length > 0 ? text[0].toLowerCase() + text.slice(1) : text;
}

/** The error body for an `RpcError`. */
export function errorBody(error: RpcError): ErrorBody {
  return { error: { code: error.code, message: error.message, details: error.details } };
}
