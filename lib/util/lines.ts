/**
 * Splitting a stream into lines as it arrives: the one line reader of Docker's NDJSON answers and the Machine
 * RPC streams read line by line.
 *
 * @module
 */

/**
 * The lines of a stream of bytes (or strings) as they arrive, without their newline; the last one even without
 * one (an empty string when the stream ended with a newline). A character split across chunks is kept whole.
 */
export async function* textLines(chunks: AsyncIterable<unknown>): AsyncGenerator<string> {
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of chunks) {
    buffer += typeof chunk === "string" ? chunk : decoder.decode(chunk as Uint8Array, { stream: true });
    let at: number;
    while ((at = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, at);
      buffer = buffer.slice(at + 1);
    }
  }
  yield buffer;
}
