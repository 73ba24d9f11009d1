/**
 * Release naming and the release source. A source is a local directory or an `http(s)://` base URL laid out as
 * `<base>/v<major>/<channel>` (a text file holding one exact version) and `<base>/<version>/` holding
 * `ployz-<version>-<triple>.tar.gz` and `SHA256SUMS`. Every name is validated before it becomes part of a path or
 * URL, so no request can reach outside the source.
 *
 * @module
 */

import { isAbsolute, join } from "node:path";
import { InstallError } from "./errors.ts";
import { messageOf } from "../util/mod.ts";

const VERSION =
  /^(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})(-[0-9A-Za-z]+(\.[0-9A-Za-z]+)*)?$/;
const CHANNEL = /^[a-z][a-z0-9-]{0,31}$/;
const TRIPLE = /^[a-z0-9_]+-[a-z0-9_]+-[a-z0-9_]+(-[a-z0-9_]+)?$/;

/** Returns `version` when it is an exact semver version (`0.1.0`, `1.2.3-beta.1`); refuses anything else. */
export function checkVersion(version: string): string {
  if (!VERSION.test(version)) {
    throw new InstallError(
      "invalid_argument",
      `Invalid version "${version}": expected an exact version such as "0.1.0"`,
    );
  }
  return version;
}

/** Returns `channel` when it is a plain channel name (`stable`, `beta`). */
export function checkChannel(channel: string): string {
  if (!CHANNEL.test(channel)) {
    throw new InstallError(
      "invalid_argument",
      `Invalid channel "${channel}": expected a name such as "stable"`,
    );
  }
  return channel;
}

/** The release line a version belongs to: `v0` for `0.x`; a daemon follows its own line's channels. */
export function majorLine(version: string): string {
  return `v${checkVersion(version).split(".")[0]}`;
}

/** The offline-tree artifact of a version for a target triple. */
export function artifactName(version: string, triple: string): string {
  if (!TRIPLE.test(triple)) throw new InstallError("invalid_argument", `Invalid target "${triple}"`);
  return `ployz-${checkVersion(version)}-${triple}.tar.gz`;
}

/** Where releases come from. */
export interface ReleaseSource {
  /** The base as given: a directory path or an `http(s)://` URL. */
  readonly base: string;
  /** Reads a small text file below the base; `not_found` when it does not exist. */
  readText(parts: string[]): Promise<string>;
  /** Copies a file below the base to `dest`; `not_found` when it does not exist. */
  download(parts: string[], dest: string, signal?: AbortSignal): Promise<void>;
}

/** Opens a release source from a directory path or an `http(s)://` base URL. */
export function openReleaseSource(base: string): ReleaseSource {
  if (/^https?:\/\//.test(base)) return urlSource(base.replace(/\/+$/, ""));
  if (isAbsolute(base) && !base.split("/").includes("..")) return dirSource(base);
  throw new InstallError(
    "invalid_argument",
    `Invalid release source "${
      withoutCredentials(base)
    }": expected an absolute directory or an http(s):// URL`,
  );
}

/** Resolves a channel pointer once, to the exact version it names now. */
export async function resolveChannel(source: ReleaseSource, line: string, channel: string): Promise<string> {
  checkChannel(channel);
  if (!/^v[0-9]+$/.test(line)) throw new InstallError("invalid_argument", `Invalid release line "${line}"`);
  const text = (await source.readText([line, channel])).trim();
  if (!VERSION.test(text)) {
    throw new InstallError(
      "unavailable",
      `Cannot resolve channel "${line}/${channel}" at "${withoutCredentials(source.base)}": it holds "${
        text.slice(0, 40)
      }", not a version`,
    );
  }
  return text;
}

function checkParts(parts: string[]): void {
  for (const part of parts) {
    if (part === "" || part === "." || part === ".." || part.includes("/")) {
      throw new InstallError("invalid_argument", `Invalid release path segment "${part}"`);
    }
  }
}

function dirSource(base: string): ReleaseSource {
  function path(parts: string[]): string {
    checkParts(parts);
    return join(base, ...parts);
  }
  return {
    base,
    async readText(parts) {
      try {
        return await Deno.readTextFile(path(parts));
      } catch (error) {
        throw notFoundOr(error, base, parts);
      }
    },
    async download(parts, dest) {
      try {
        await Deno.copyFile(path(parts), dest);
      } catch (error) {
        throw notFoundOr(error, base, parts);
      }
    },
  };
}

function notFoundOr(error: unknown, base: string, parts: string[]): unknown {
  if (error instanceof Deno.errors.NotFound) {
    return new InstallError("not_found", `Cannot find "${parts.join("/")}" in release source "${base}"`);
  }
  return error;
}

/** `text` with the credentials of any URL in it (`//user:password@`) left out. */
export function withoutCredentials(text: string): string {
  return text.replace(/\/\/[^/@\s"]*@/g, "//");
}

function urlSource(base: string): ReleaseSource {
  // Credentials in the base travel as an Authorization header (fetch refuses them in a URL) and never appear in
  // a message.
  const parsed = new URL(base);
  const headers = new Headers();
  if (parsed.username !== "" || parsed.password !== "") {
    const user = decodeURIComponent(parsed.username);
    const password = decodeURIComponent(parsed.password);
    headers.set("authorization", `Basic ${btoa(`${user}:${password}`)}`);
    parsed.username = "";
    parsed.password = "";
  }
  const plain = parsed.toString().replace(/\/+$/, "");
  const shown = withoutCredentials(base);
  async function get(parts: string[], signal?: AbortSignal): Promise<Response> {
    checkParts(parts);
    const path = parts.map(encodeURIComponent).join("/");
    let response: Response;
    try {
      response = await fetch(`${plain}/${path}`, {
        headers,
        signal: signal ?? AbortSignal.timeout(300_000),
      });
    } catch (error) {
      throw new InstallError(
        "unavailable",
        `Cannot fetch "${shown}/${path}": ${withoutCredentials(messageOf(error))}`,
      );
    }
    if (/^https:/.test(plain) && !/^https:/.test(response.url)) {
      await response.body?.cancel();
      throw new InstallError("unavailable", `Cannot fetch "${shown}/${path}": redirected away from https`);
    }
    if (response.status === 404) {
      await response.body?.cancel();
      throw new InstallError("not_found", `Cannot find "${parts.join("/")}" in release source "${shown}"`);
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new InstallError("unavailable", `Cannot fetch "${shown}/${path}": HTTP ${response.status}`);
    }
    return response;
  }
  return {
    base,
    async readText(parts) {
      return await (await get(parts, AbortSignal.timeout(30_000))).text();
    },
    async download(parts, dest, signal) {
      const response = await get(parts, signal);
      const file = await Deno.open(dest, { write: true, create: true, truncate: true, mode: 0o600 });
      await response.body!.pipeTo(file.writable);
    },
  };
}
