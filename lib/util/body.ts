/**
 * Reading a request or response body under a byte cap. A declared `content-length` over the cap is refused before
 * any byte is read; a chunked body (no length) is read chunk by chunk and cancelled at the first byte past the cap,
 * so a peer streaming an endless body costs at most the cap, never the whole body.
 *
 * @module
 */

/** The body's bytes, or `undefined` when it is (or declares itself) longer than `maxBytes`. */
export async function readBodyCapped(
  request: Request | Response,
  maxBytes: number,
): Promise<Uint8Array<ArrayBuffer> | undefined> {
  const declared = request.headers.get("content-length");
  if (declared !== null && !(Number(declared) <= maxBytes)) {
    await request.body?.cancel().catch(() => {});
    return undefined;
  }
  if (request.body === null) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = request.body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        return undefined;
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return concatBytes(chunks);
}

/** The bytes of `chunks`, one after the other, in one array. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(chunks.reduce((n, chunk) => n + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
