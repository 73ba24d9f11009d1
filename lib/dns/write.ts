import { basename, dirname, join } from "node:path";
import type { DnsSpec } from "./spec.ts";

/**
 * Writes dns.json atomically: a temp file in the same directory, fsync, rename over the target, fsync the
 * directory. The Internal DNS process therefore sees the old spec or the new one, never half of one. The daemon
 * is the only writer.
 */
export async function writeDnsSpec(path: string, spec: DnsSpec): Promise<void> {
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.${crypto.randomUUID()}.tmp`);
  const bytes = new TextEncoder().encode(JSON.stringify(spec, null, 2) + "\n");
  try {
    using file = await Deno.open(temp, { write: true, createNew: true, mode: 0o644 });
    let written = 0;
    while (written < bytes.length) written += await file.write(bytes.subarray(written));
    await file.sync();
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
  try {
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
  await syncDirectory(dir);
}

async function syncDirectory(dir: string): Promise<void> {
  try {
    using handle = await Deno.open(dir, { read: true });
    await handle.sync();
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself is already atomic.
  }
}
