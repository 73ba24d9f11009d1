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

/**
 * The lines of `chunks` (as {@link textLines}) until `signal` aborts, then no more: each read is raced against the
 * abort, so the lines end at once even when the source's pending read never settles (a response cut off in the
 * network, or one whose cancel or destroy does not end it). The source is then abandoned; its owner closes it.
 */
export async function* linesUntilAborted(
  chunks: AsyncIterable<unknown>,
  signal: AbortSignal,
): AsyncGenerator<string> {
  if (signal.aborted) return;
  let onAbort = (): void => {};
  const aborted = new Promise<undefined>((resolve) => {
    onAbort = () => resolve(undefined);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  const lines = textLines(chunks);
  try {
    for (;;) {
      const next = await Promise.race([lines.next(), aborted]);
      if (next === undefined || next.done === true) return;
      yield next.value;
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    // Not awaited: a source that ignored the abort may never finish its pending read.
    lines.return(undefined).catch(() => {});
  }
}
