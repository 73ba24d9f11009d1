/**
 * The one error class of the Docker adapter, and the mapping from what dockerode and the socket throw to it.
 *
 * Messages are durable diagnostics: sentence case, quoted values, no trailing period, never an environment value.
 * The raw error stays on `cause` for the daemon's own log.
 *
 * @module
 */

import { CodedError, type ErrorCode } from "../../util/mod.ts";

/** A failed Docker operation: a code to branch on, a sanitized message, and details naming what was involved. */
export class DockerError extends CodedError {
  /** Structured context (container, label, expected and found values); never secrets. */
  declare readonly details: Readonly<Record<string, string>>;

  /** Builds an error; `cause` keeps the raw engine error for logs. */
  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(code, message, options);
    this.name = "DockerError";
    Object.freeze(this.details);
  }
}

const MAX_MESSAGE = 300;

/**
 * Makes an engine message fit for a durable diagnostic: one line, bounded, `KEY=value` values redacted (Docker
 * quotes environment entries back in some create errors), no trailing period.
 */
export function sanitizeMessage(raw: string): string {
  let text = raw.replace(/^\(HTTP code \d+\)\s*[^-]*-\s*/, "");
  // deno-lint-ignore no-control-regex
  text = text.replace(/[\u0000-\u001f\u007f]+/g, " ").replace(/\s+/g, " ").trim();
  text = text.replace(/\b([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|'[^']*'|[^\s,;)\]}]+)/g, "$1=<redacted>");
  if (text.length > MAX_MESSAGE) text = `${text.slice(0, MAX_MESSAGE - 1)}…`;
  return text.replace(/[.\s]+$/, "");
}

const UNAVAILABLE_CODES = new Set([
  "ENOENT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EACCES",
  "ECONNABORTED",
  "EHOSTUNREACH",
]);

interface EngineFailure {
  statusCode?: number;
  code?: string;
  json?: unknown;
  message?: string;
}

function engineMessage(failure: EngineFailure): string {
  const json = failure.json;
  if (json !== null && typeof json === "object" && "message" in json && typeof json.message === "string") {
    return json.message;
  }
  if (typeof json === "string" && json.trim() !== "") return json;
  if (json instanceof Uint8Array && json.length > 0) return new TextDecoder().decode(json);
  return failure.message ?? "unknown failure";
}

function codeForStatus(status: number): ErrorCode {
  if (status === 400) return "invalid_argument";
  if (status === 404) return "not_found";
  if (status === 403 || status === 409) return "conflict";
  if (status === 503) return "unavailable";
  return "internal";
}

/**
 * Turns whatever a Docker request threw into a `DockerError`; `operation` reads as a verb phrase
 * (`start container "web"`) and becomes `Cannot start container "web": <reason>`.
 */
export function toDockerError(operation: string, error: unknown): DockerError {
  if (error instanceof DockerError) return error;
  const failure: EngineFailure = typeof error === "object" && error !== null ? error as EngineFailure : {
    message: String(error),
  };
  if (typeof failure.statusCode === "number") {
    const code = codeForStatus(failure.statusCode);
    return new DockerError(code, `Cannot ${operation}: ${sanitizeMessage(engineMessage(failure))}`, {
      details: { status: String(failure.statusCode) },
      cause: error,
    });
  }
  if (typeof failure.code === "string" && UNAVAILABLE_CODES.has(failure.code)) {
    return new DockerError("unavailable", `Cannot ${operation}: Docker is not answering (${failure.code})`, {
      details: { errno: failure.code },
      cause: error,
    });
  }
  if (/socket hang up|ECONNRESET|premature close/i.test(failure.message ?? "")) {
    return new DockerError("unavailable", `Cannot ${operation}: Docker closed the connection`, {
      cause: error,
    });
  }
  return new DockerError(
    "internal",
    `Cannot ${operation}: ${sanitizeMessage(failure.message ?? "unknown failure")}`,
    {
      cause: error,
    },
  );
}
