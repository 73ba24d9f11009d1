// Contexts: how the operator names a Cluster's Entry Machine, and which one a command talks to.
import { OperatorError } from "./errors.ts";

/** Where the CLI connects: a daemon's unix socket, or `ployzd dial-stdio` on a host reached over SSH. */
export type ConnectTarget =
  | { kind: "unix"; path: string }
  | { kind: "ssh"; user?: string; host: string; port?: number };

const CONTEXT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const SSH_USER = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,31}$/;
const HOST_NAME =
  /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const IPV6 = /^[0-9A-Fa-f:.]{2,45}$/;
/** A unix socket path must fit `sun_path` (108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;

/** Returns `name` when it is a valid context name (letters, digits, `.`, `_`, `-`; at most 63). */
export function checkContextName(name: string): string {
  if (!CONTEXT_NAME.test(name)) {
    throw new OperatorError(
      "invalid_argument",
      `Invalid context name "${name.slice(0, 80)}": use letters, digits, ".", "_" or "-" (at most 63)`,
      { context: name.slice(0, 80) },
    );
  }
  return name;
}

function malformed(text: string, why: string): OperatorError {
  return new OperatorError(
    "invalid_argument",
    `Invalid connection URL "${
      text.slice(0, 200)
    }": ${why} (expected ssh://[user@]host[:port] or unix:///path/to/ployz.sock)`,
    { url: text.slice(0, 200) },
  );
}

/** Parses `ssh://[user@]host[:port]` or `unix:///absolute/path`; anything else is `invalid_argument`. */
export function parseConnectUrl(text: string): ConnectTarget {
  if (text.length > 1024) throw malformed(text, "longer than 1024 characters");
  if (text.startsWith("unix://")) {
    const path = text.slice("unix://".length);
    if (!path.startsWith("/")) throw malformed(text, "the socket path must be absolute");
    if (path.includes("\0")) throw malformed(text, "the socket path holds a NUL byte");
    if (new TextEncoder().encode(path).length > MAX_SOCKET_PATH) {
      throw malformed(text, `the socket path is longer than ${MAX_SOCKET_PATH} bytes`);
    }
    return { kind: "unix", path };
  }
  if (!text.startsWith("ssh://")) throw malformed(text, "the scheme must be ssh or unix");
  let rest = text.slice("ssh://".length);
  if (rest.endsWith("/")) rest = rest.slice(0, -1);
  if (/[/?#\s]/.test(rest)) throw malformed(text, "an ssh URL has no path, query or spaces");
  let user: string | undefined;
  const at = rest.lastIndexOf("@");
  if (at >= 0) {
    user = rest.slice(0, at);
    rest = rest.slice(at + 1);
    if (!SSH_USER.test(user)) throw malformed(text, `invalid user "${user}"`);
  }
  let host: string;
  let portText: string | undefined;
  if (rest.startsWith("[")) {
    const close = rest.indexOf("]");
    if (close < 0) throw malformed(text, "unclosed [ in the host");
    host = rest.slice(1, close);
    if (!IPV6.test(host)) throw malformed(text, `invalid IPv6 address "${host}"`);
    const after = rest.slice(close + 1);
    if (after !== "" && !after.startsWith(":")) throw malformed(text, "unexpected text after the host");
    portText = after === "" ? undefined : after.slice(1);
  } else {
    const colon = rest.indexOf(":");
    host = colon < 0 ? rest : rest.slice(0, colon);
    portText = colon < 0 ? undefined : rest.slice(colon + 1);
    if (host === "" || host.length > 253 || !HOST_NAME.test(host)) {
      throw malformed(text, `invalid host "${host}"`);
    }
  }
  let port: number | undefined;
  if (portText !== undefined) {
    port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : NaN;
    if (!(port >= 1 && port <= 65535)) throw malformed(text, `invalid port "${portText}"`);
  }
  return {
    kind: "ssh",
    host,
    ...(user === undefined ? {} : { user }),
    ...(port === undefined ? {} : { port }),
  };
}

/** The URL of a target, as `context ls` shows and the Config Store keeps it. */
export function formatConnectUrl(target: ConnectTarget): string {
  if (target.kind === "unix") return `unix://${target.path}`;
  const host = target.host.includes(":") ? `[${target.host}]` : target.host;
  return `ssh://${target.user === undefined ? "" : `${target.user}@`}${host}${
    target.port === undefined ? "" : `:${target.port}`
  }`;
}

/** Where a command's connection came from, strongest first. */
export const CONNECTION_SOURCES = [
  "--connect",
  "--context",
  "PLOYZ_CONTEXT",
  "x-context",
  "context use",
  "default",
] as const;

/** One of {@link CONNECTION_SOURCES}. */
export type ConnectionSource = typeof CONNECTION_SOURCES[number];

/** What decides a command's connection. */
export interface ConnectionInputs {
  /** `--connect URL`. */
  connectFlag?: string;
  /** `--context NAME`. */
  contextFlag?: string;
  /** `$PLOYZ_CONTEXT`. */
  envContext?: string;
  /** The Compose file's top-level `x-context` (deploy only). */
  composeContext?: string;
  /** The context `ployz context use` selected. */
  currentContext?: string;
  /** A saved context's URL by name. */
  lookup(name: string): string | undefined;
  /** The local Machine's socket, used when nothing else decides. */
  defaultSocket: string;
}

/** The connection a command uses, and why. */
export interface ConnectionChoice {
  /** What decided it. */
  source: ConnectionSource;
  /** The context's name, when a context decided it. */
  context?: string;
  /** The URL. */
  url: string;
  /** The parsed URL. */
  target: ConnectTarget;
}

/**
 * Decides a command's connection: `--connect`, then `--context`, then `$PLOYZ_CONTEXT`, then the Compose file's
 * `x-context` (for `deploy`), then the context `ployz context use` selected, then the local Machine's socket. A
 * named context that is not saved is `not_found`; a bad URL is `invalid_argument`. Empty values count as unset.
 */
export function chooseConnection(inputs: ConnectionInputs): ConnectionChoice {
  if (inputs.connectFlag !== undefined && inputs.connectFlag !== "") {
    return { source: "--connect", url: inputs.connectFlag, target: parseConnectUrl(inputs.connectFlag) };
  }
  const named: [ConnectionSource, string | undefined][] = [
    ["--context", inputs.contextFlag],
    ["PLOYZ_CONTEXT", inputs.envContext],
    ["x-context", inputs.composeContext],
    ["context use", inputs.currentContext],
  ];
  for (const [source, name] of named) {
    if (name === undefined || name === "") continue;
    const url = inputs.lookup(name);
    if (url === undefined) {
      throw new OperatorError(
        "not_found",
        `Unknown context "${name.slice(0, 80)}" (from ${source}): "ployz context ls" lists the saved ones, ` +
          `"ployz context add" saves one`,
        { context: name.slice(0, 80), source },
      );
    }
    return { source, context: name, url, target: parseConnectUrl(url) };
  }
  const url = `unix://${inputs.defaultSocket}`;
  return { source: "default", url, target: { kind: "unix", path: inputs.defaultSocket } };
}
