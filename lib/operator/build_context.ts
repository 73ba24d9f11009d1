// A build context read on the operator's side: the directory a Compose `build:` names, filtered by its
// `.dockerignore` as the docker CLI filters it, packed as a tar into a private temporary file (bounded in bytes and
// entries; unlinked as soon as it is open, so a CLI killed at any point leaves no file behind), and summarised by a content digest of the files and the build inputs that decide the image. The digest
// tags the image, so an unchanged context is not built again.
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { Writable } from "node:stream";
import { INLINE_DOCKERFILE_NAME, type NormalizedBuild } from "../deploy/mod.ts";
import { OperatorError } from "./errors.ts";

/** The part of @balena/dockerignore (Docker's own matching rules, ported) used here. */
interface IgnoreRules {
  add(patterns: string[]): IgnoreRules;
  ignores(path: string): boolean;
}

/** One tar-stream header, as far as packing uses it. */
interface TarHeader {
  name: string;
  type: "file" | "directory" | "symlink";
  mode: number;
  mtime: Date;
  size?: number;
  linkname?: string;
}

/** The part of tar-stream's pack stream used here (the package ships no types). */
interface TarPack {
  entry(header: TarHeader, content: Buffer | undefined, done: (error?: Error) => void): unknown;
  finalize(): void;
  destroy(): void;
  on(event: "data", listener: (chunk: Buffer) => void): void;
  pipe<T extends NodeJS.WritableStream>(to: T): T;
}

/**
 * The two CommonJS packages, loaded only when a context is packed: every other command (a Deploy without `build:`
 * among them) starts without them. Their types declare an ES default export over a CommonJS function.
 */
async function packers(): Promise<{
  dockerignore: (options?: { ignorecase?: boolean }) => IgnoreRules;
  tar: { pack(): TarPack };
}> {
  const [ignoreModule, tarModule] = await Promise.all([import("@balena/dockerignore"), import("tar-stream")]);
  return {
    dockerignore: ignoreModule.default as unknown as (options?: { ignorecase?: boolean }) => IgnoreRules,
    tar: tarModule.default as unknown as { pack(): TarPack },
  };
}

/** Most bytes a context's tar may hold: it is sent over Machine RPC before anything is built. */
export const MAX_CONTEXT_BYTES = 512 * 1024 * 1024;
/** Most files, directories and links a context may hold. */
export const MAX_CONTEXT_ENTRIES = 100_000;

/** A context packed for sending. */
export interface PackedContext {
  /**
   * The tar, in a temporary file already unlinked (only this open handle reaches it); close it with
   * {@link discardContext}.
   */
  file: Deno.FsFile;
  /** Bytes of the tar: what is sent. */
  bytes: number;
  /** Bytes of the files it holds, as on disk. */
  fileBytes: number;
  /** Files, directories and links packed. */
  entries: number;
  /** Entries `.dockerignore` left out. */
  ignored: number;
  /** `sha256` hex of the tar, which the building Machine checks. */
  tarSha256: string;
  /** `sha256` hex of the files' content and the build inputs; the image's tag is its first 16 digits. */
  digest: string;
}

/** Limits of {@link packContext}; tests lower them. */
export interface ContextLimits {
  /** Most tar bytes. */
  maxBytes: number;
  /** Most entries. */
  maxEntries: number;
}

/** `n` bytes in MiB, as limits are stated; exact below 1 MiB. */
function mib(n: number): string {
  return n < 1024 * 1024 ? `${n} bytes` : `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

/** The tag a build's content digest gives its image. */
export function buildTag(digest: string): string {
  return digest.slice(0, 16);
}

/** Closes a packed context's file, which frees its space (it has no name left); closing twice is fine. */
export function discardContext(packed: Pick<PackedContext, "file">): Promise<void> {
  try {
    packed.file.close();
  } catch {
    // Closed already.
  }
  return Promise.resolve();
}

/** A private temporary file with its name already removed: nothing is left if this process is killed. */
async function anonymousFile(): Promise<Deno.FsFile> {
  const path = await Deno.makeTempFile({ prefix: "ployz-build-", suffix: ".tar" });
  try {
    await Deno.chmod(path, 0o600);
    return await Deno.open(path, { read: true, write: true });
  } finally {
    await Deno.remove(path).catch(() => {});
  }
}

/** A node Writable onto `file`, so tar-stream's pack can be piped into it with its back-pressure. */
function writerOf(file: Deno.FsFile): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done): void {
      (async () => {
        for (let at = 0; at < chunk.length;) at += await file.write(chunk.subarray(at));
      })().then(() => done(), done);
    },
  });
}

/** The build inputs besides the files that decide what is built, in a stable order. */
function inputsOf(build: NormalizedBuild): string {
  return JSON.stringify([
    build.dockerfile ?? "Dockerfile",
    build.dockerfileInline,
    Object.entries(build.args).sort(),
    build.target,
    Object.entries(build.labels).sort(),
  ]);
}

function posix(path: string): string {
  return path.split("\\").join("/");
}

async function readIgnore(context: string): Promise<string[]> {
  try {
    const info = await Deno.stat(join(context, ".dockerignore"));
    if (!info.isFile || info.size > 1024 * 1024) {
      throw new OperatorError(
        "invalid_argument",
        `"${join(context, ".dockerignore")}" is not a regular file of at most 1 MiB`,
      );
    }
    return (await Deno.readTextFile(join(context, ".dockerignore"))).split(/\r?\n/)
      .map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

/**
 * Packs `build.context` into a temporary tar, honouring `.dockerignore` (the Dockerfile and `.dockerignore` are
 * always sent, as the docker CLI sends them). Throws `invalid_argument` naming the path for a missing context or
 * Dockerfile, and for a context over a limit, as soon as the limit is passed.
 */
export async function packContext(
  build: NormalizedBuild,
  limits: ContextLimits = { maxBytes: MAX_CONTEXT_BYTES, maxEntries: MAX_CONTEXT_ENTRIES },
): Promise<PackedContext> {
  const context = build.context;
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(context);
  } catch {
    throw new OperatorError("invalid_argument", `build context "${context}" does not exist`, { context });
  }
  if (!info.isDirectory) {
    throw new OperatorError("invalid_argument", `build context "${context}" is not a directory`, { context });
  }
  const dockerfile = build.dockerfileInline !== null
    ? INLINE_DOCKERFILE_NAME
    : build.dockerfile ?? "Dockerfile";
  if (build.dockerfileInline === null) {
    const found = await Deno.stat(join(context, dockerfile)).catch(() => undefined);
    if (found?.isFile !== true) {
      throw new OperatorError(
        "invalid_argument",
        `Dockerfile "${join(context, dockerfile)}" does not exist or is not a regular file`,
        { context, dockerfile },
      );
    }
  }
  const patterns = await readIgnore(context);
  const { dockerignore, tar } = await packers();
  const ignore = dockerignore({ ignorecase: false }).add(patterns);
  // With a "!" exception anywhere, an ignored directory may still hold files to send, so it is walked.
  const hasExceptions = patterns.some((line) => line.startsWith("!"));
  const always = new Set([dockerfile, ".dockerignore"]);

  const file = await anonymousFile();
  const pack = tar.pack();
  const out = writerOf(file);
  const tarHash = createHash("sha256");
  const digest = createHash("sha256");
  let bytes = 0;
  let overLimit: OperatorError | undefined;
  let current = "";
  // Names the limit, the size reached and the entry that passed it.
  const tooBig = (name: string, fileSize: number | undefined, size: number): OperatorError =>
    new OperatorError(
      "invalid_argument",
      `build context "${context}" is over the limit of ${mib(limits.maxBytes)}: with "${name}"${
        fileSize === undefined ? "" : ` (${mib(fileSize)})`
      } it holds at least ${mib(size)}; list what the image does not need in its .dockerignore`,
      { context, limit: limits.maxBytes, size, file: name, "file_size": fileSize },
    );
  pack.on("data", (chunk: Buffer) => {
    bytes += chunk.length;
    tarHash.update(chunk);
    if (bytes > limits.maxBytes) overLimit ??= tooBig(current, undefined, bytes);
  });
  pack.pipe(out);
  const written = new Promise<void>((resolve, reject) => {
    out.on("finish", () => resolve());
    out.on("error", reject);
  });
  // Awaited below once the pack is finalized; a refusal before that must not leave it unhandled.
  written.catch(() => {});
  let entries = 0;
  let ignored = 0;
  let fileBytes = 0;
  const add = (header: TarHeader, content?: Buffer): Promise<void> =>
    new Promise((resolve, reject) =>
      pack.entry(header, content, (error?: Error) => error ? reject(error) : resolve())
    );
  const count = (): void => {
    entries++;
    if (entries > limits.maxEntries) {
      overLimit ??= new OperatorError(
        "invalid_argument",
        `build context "${context}" holds more than ${limits.maxEntries} files: list what the image does not need in its .dockerignore`,
        { context, limit: limits.maxEntries },
      );
    }
    if (overLimit !== undefined) throw overLimit;
  };

  async function walk(relative: string): Promise<void> {
    const names: Deno.DirEntry[] = [];
    for await (const entry of Deno.readDir(join(context, relative))) names.push(entry);
    names.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    for (const entry of names) {
      const name = relative === "" ? entry.name : `${relative}/${entry.name}`;
      const skip = !always.has(name) && ignore.ignores(posix(name));
      if (skip && !(entry.isDirectory && hasExceptions)) {
        ignored++;
        continue;
      }
      const full = join(context, name);
      const stat = await Deno.lstat(full);
      current = name;
      const mode = (stat.mode ?? 0o644) & 0o7777;
      const mtime = stat.mtime ?? new Date(0);
      if (stat.isSymlink) {
        if (skip) continue;
        count();
        const target = await Deno.readLink(full);
        digest.update(`l\0${name}\0${target}\0`);
        await add({ name, type: "symlink", linkname: target, mode, mtime });
      } else if (stat.isDirectory) {
        if (!skip) {
          count();
          digest.update(`d\0${name}\0${mode.toString(8)}\0`);
          await add({ name, type: "directory", mode, mtime });
        }
        await walk(name);
      } else if (stat.isFile) {
        if (skip) {
          ignored++;
          continue;
        }
        count();
        // Refused from the sizes on disk, before the file is read: nothing of it is packed or sent.
        if (bytes + stat.size > limits.maxBytes) {
          overLimit ??= tooBig(name, stat.size, bytes + stat.size);
          throw overLimit;
        }
        const content = Buffer.from(await Deno.readFile(full));
        fileBytes += content.length;
        digest.update(
          `f\0${name}\0${mode.toString(8)}\0${createHash("sha256").update(content).digest("hex")}\0`,
        );
        await add({ name, type: "file", mode, mtime, size: content.length }, content);
      }
      // Sockets, devices and FIFOs are not sent, as the docker CLI does not send them.
    }
  }

  try {
    await walk("");
    if (build.dockerfileInline !== null) {
      count();
      const content = Buffer.from(build.dockerfileInline);
      await add({ name: INLINE_DOCKERFILE_NAME, type: "file", mode: 0o644, mtime: new Date(0) }, content);
    }
    digest.update(inputsOf(build));
    pack.finalize();
    await written;
    if (overLimit !== undefined) throw overLimit;
  } catch (error) {
    pack.destroy();
    out.destroy();
    await discardContext({ file });
    throw error;
  }
  return {
    file,
    bytes,
    fileBytes,
    entries,
    ignored,
    tarSha256: tarHash.digest("hex"),
    digest: digest.digest("hex"),
  };
}
