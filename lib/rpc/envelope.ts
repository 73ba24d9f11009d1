/**
 * The request envelope (`{ "protocol_major": 1, ...fields }`) and the error body
 * (`{ "error": { code, message, details } }`).
 *
 * @module
 */

import * as z from "zod";
import { PROTOCOL_MAJOR } from "./route.ts";
import { RpcError } from "./errors.ts";

/** Wraps request fields in the envelope. */
export function envelope(fields: object): Record<string, unknown> {
  return { "protocol_major": PROTOCOL_MAJOR, ...fields };
}

/**
 * Checks the envelope of a parsed request body and its fields against the route's request reader. Throws
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

/** The body of every error answer. */
export interface ErrorBody {
  /** The error. */
  error: { code: string; message: string; details: Record<string, unknown> };
}

/** Tolerant reader of {@link ErrorBody}. */
export const ErrorBodySchema: z.ZodType<ErrorBody> = z.looseObject({
  error: z.looseObject({
    code: z.string().max(64),
    message: z.string().max(16384),
    details: z.record(z.string(), z.unknown()).default({}),
  }),
});
