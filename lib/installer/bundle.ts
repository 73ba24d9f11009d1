// A release bundle as one ustar stream: what SSH provisioning sends to a host's `tar -x` in a single session
// (install.sh, SHA256SUMS and the artifact, laid out as a release source). Files are read as they are sent, so a
// large artifact is never held in memory; the stream counts the bytes it produced.

/** One entry: a directory, or a file read from `path` on this machine. */
export type BundleEntry =
  | { kind: "dir"; name: string }
  | { kind: "file"; name: string; path: string; mode?: number };

const BLOCK = 512;
const encoder = new TextEncoder();

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

/** A ustar header for `name` (at most 99 bytes, no `..`). */
export function tarHeader(name: string, options: { size: number; mode: number; dir: boolean }): Uint8Array {
  const bytes = encoder.encode(name);
  if (bytes.length === 0 || bytes.length > 99 || name.startsWith("/") || name.split("/").includes("..")) {
    throw new TypeError(`Invalid bundle entry name "${name}"`);
  }
  if (options.size < 0 || options.size >= 8 ** 11) throw new TypeError(`Bundle entry "${name}" is too large`);
  const header = new Uint8Array(BLOCK);
  const put = (offset: number, text: string): void => header.set(encoder.encode(text), offset);
  header.set(bytes, 0);
  put(100, octal(options.mode, 8));
  put(108, octal(0, 8));
  put(116, octal(0, 8));
  put(124, octal(options.dir ? 0 : options.size, 12));
  put(136, octal(Math.floor(Date.now() / 1000), 12));
  put(148, "        ");
  put(156, options.dir ? "5" : "0");
  put(257, "ustar\0");
  put(263, "00");
  let sum = 0;
  for (const b of header) sum += b;
  put(148, sum.toString(8).padStart(6, "0") + "\0 ");
  return header;
}

/** What {@link bundleStream} produces: the stream, its exact length, and how much of it was read so far. */
export interface Bundle {
  /** The ustar bytes. */
  stream: ReadableStream<Uint8Array>;
  /** Total bytes the stream produces. */
  size: number;
  /** Bytes handed out so far. */
  sent(): number;
}

/** Streams `entries` as a ustar archive (sizes taken now; a file that changes while sent is an error). */
export async function bundleStream(entries: BundleEntry[]): Promise<Bundle> {
  const sized: { entry: BundleEntry; size: number }[] = [];
  let total = 2 * BLOCK;
  for (const entry of entries) {
    const size = entry.kind === "file" ? (await Deno.stat(entry.path)).size : 0;
    sized.push({ entry, size });
    total += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  let sent = 0;
  async function* chunks(): AsyncGenerator<Uint8Array> {
    for (const { entry, size } of sized) {
      if (entry.kind === "dir") {
        yield tarHeader(entry.name.replace(/\/?$/, "/"), { size: 0, mode: 0o700, dir: true });
        continue;
      }
      yield tarHeader(entry.name, { size, mode: entry.mode ?? 0o600, dir: false });
      let read = 0;
      using file = await Deno.open(entry.path, { read: true });
      const buffer = new Uint8Array(256 * 1024);
      while (read < size) {
        const n = await file.read(buffer.subarray(0, Math.min(buffer.length, size - read)));
        if (n === null) throw new Error(`"${entry.path}" ended early while it was being sent`);
        read += n;
        yield buffer.slice(0, n);
      }
      const pad = (BLOCK - (size % BLOCK)) % BLOCK;
      if (pad > 0) yield new Uint8Array(pad);
    }
    yield new Uint8Array(2 * BLOCK);
  }
  const source = chunks();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await source.next();
        if (done) controller.close();
        else {
          sent += value.length;
          controller.enqueue(value);
        }
      } catch (error) {
        controller.error(error);
      }
    },
    async cancel() {
      await source.return(undefined);
    },
  });
  return { stream, size: total, sent: () => sent };
}
