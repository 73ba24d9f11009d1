/**
 * Exec routes of Machine RPC, to be merged into the catalog: `ployz exec` runs a command in an owned container,
 * with or without a TTY. `ployz.container.exec.v1` starts it and answers a session id; `exec_attach.v1` streams its
 * output as NDJSON frames (`output` with base64 bytes, then one `exit` with the exit code); `exec_input.v1` sends
 * stdin bytes, a terminal size, or the end of stdin. Three plain request/response routes rather than one duplex
 * stream, so they cross the SSH bridge and the Entry Machine's forwarding like every other call.
 *
 * @module
 */

import * as z from "zod";
import { route, type RouteTable } from "./route.ts";

/** Largest stdin chunk one `exec_input` call carries, in bytes (before base64). */
export const MAX_EXEC_INPUT = 64 * 1024;

const id = z.string().min(1).max(128);
const size = z.number().int().min(1).max(10_000);

/** What `ployz.container.exec.v1` asks. */
export interface ExecStartRequest {
  /** Docker id or container name (an owned container). */
  id: string;
  /** The command and its arguments. */
  cmd: string[];
  /** Allocate a TTY (stdout and stderr merged, as a terminal shows them). */
  tty: boolean;
  /** Terminal width, with `tty`. */
  cols?: number;
  /** Terminal height, with `tty`. */
  rows?: number;
}

/** Reader of {@link ExecStartRequest}; fields it does not know are ignored. */
export const ExecStartRequestSchema: z.ZodType<ExecStartRequest> = z.lazy(() =>
  z.object({
    id,
    cmd: z.array(z.string().max(64 * 1024)).min(1).max(1024),
    tty: z.boolean(),
    cols: size.optional(),
    rows: size.optional(),
  })
);

/** What `ployz.container.exec.v1` answers. */
export interface ExecStartResponse {
  /** The session to attach to and send input to. */
  session: string;
  /** The container it runs in. */
  container: string;
}

/** Tolerant reader of {@link ExecStartResponse}. */
export const ExecStartResponseSchema: z.ZodType<ExecStartResponse> = z.lazy(() =>
  z.looseObject({
    session: z.string(),
    container: z.string(),
  })
);

/** What `ployz.container.exec_attach.v1` asks. */
export interface ExecAttachRequest {
  /** The session `exec.v1` answered. */
  session: string;
}

/** Reader of {@link ExecAttachRequest}; fields it does not know are ignored. */
export const ExecAttachRequestSchema: z.ZodType<ExecAttachRequest> = z.lazy(() => z.object({ session: id }));

/** What `ployz.container.exec_input.v1` asks: any of stdin bytes, a new terminal size, the end of stdin. */
export interface ExecInputRequest {
  /** The session. */
  session: string;
  /** Stdin bytes, base64. */
  data?: string;
  /** New terminal width. */
  cols?: number;
  /** New terminal height. */
  rows?: number;
  /** No more stdin. */
  eof?: boolean;
}

/** Reader of {@link ExecInputRequest}; fields it does not know are ignored. */
export const ExecInputRequestSchema: z.ZodType<ExecInputRequest> = z.lazy(() =>
  z.object({
    session: id,
    data: z.string().max(Math.ceil(MAX_EXEC_INPUT / 3) * 4).optional(),
    cols: size.optional(),
    rows: size.optional(),
    eof: z.boolean().optional(),
  })
);

/** What `ployz.container.exec_input.v1` answers. */
export interface ExecInputResponse {
  /** Whether the session still runs. */
  running: boolean;
}

/** Tolerant reader of {@link ExecInputResponse}. */
export const ExecInputResponseSchema: z.ZodType<ExecInputResponse> = z.lazy(() =>
  z.looseObject({ running: z.boolean() })
);

/** One frame of the attach stream. */
export type ExecFrame =
  | { type: "output"; stream: "stdout" | "stderr"; data: string }
  | { type: "exit"; "exit_code": number | null };

/** Reads one NDJSON line of the attach stream; refuses anything else. */
export function parseExecFrame(line: string): ExecFrame {
  const value = JSON.parse(line) as Record<string, unknown>;
  if (value.type === "output" && typeof value.data === "string") {
    return { type: "output", stream: value.stream === "stderr" ? "stderr" : "stdout", data: value.data };
  }
  if (value.type === "exit") {
    return { type: "exit", "exit_code": typeof value.exit_code === "number" ? value.exit_code : null };
  }
  throw new Error(`unexpected exec frame "${line.slice(0, 80)}"`);
}

/** Request and response types of the exec routes, by method name. */
export interface ExecRouteTypes {
  /**
   * `ployz.container.exec.v1`: starts a command in an owned container (`ployz exec`); answers the session to
   * attach to.
   */
  execStart: [ExecStartRequest, ExecStartResponse];
  /**
   * `ployz.container.exec_attach.v1`: the session's output as NDJSON frames, then its exit code; one attach
   * per session.
   */
  execAttach: [ExecAttachRequest, ReadableStream<Uint8Array>];
  /** `ployz.container.exec_input.v1`: sends stdin bytes, a terminal size or the end of stdin to a session. */
  execInput: [ExecInputRequest, ExecInputResponse];
}

/** The exec rows of the catalog. */
export const EXEC_ROUTES: RouteTable<ExecRouteTypes> = Object.freeze({
  execStart: route("ployz.container.exec.v1", ExecStartRequestSchema, ExecStartResponseSchema),
  execAttach: route("ployz.container.exec_attach.v1", ExecAttachRequestSchema, "stream"),
  execInput: route("ployz.container.exec_input.v1", ExecInputRequestSchema, ExecInputResponseSchema),
});
