/**
 * What the unit tests of every area share: a temporary directory removed when the test's scope ends, a clock moved
 * only by the sleeps asked of it, and a chunked body that counts what its reader pulled.
 *
 * Imported only by tests (`*_test.ts`, test fakes and test support), never by code a program runs.
 *
 * @module
 */

/** A fresh temporary directory (`prefix` starts its name) that `await using` removes with all it holds. */
export async function tempDir(prefix = "ployz-test-"): Promise<{ path: string } & AsyncDisposable> {
  const path = await Deno.makeTempDir({ prefix });
  return {
    path,
    async [Symbol.asyncDispose](): Promise<void> {
      await Deno.remove(path, { recursive: true });
    },
  };
}

/** A clock moved only by the sleeps the code under test asks for: its time, its sleep, and every sleep asked. */
export function manualClock(
  start = 1_000,
): { now: () => number; sleep: (ms: number) => Promise<void>; slept: number[] } {
  let t = start;
  const slept: number[] = [];
  return {
    now: () => t,
    sleep: (ms) => {
      slept.push(ms);
      t += ms;
      return Promise.resolve();
    },
    slept,
  };
}

/**
 * A chunked body (no length) of `chunkBytes` spaces a chunk, `totalBytes` long or endless, each chunk made only
 * when the reader pulls it, and how many bytes were pulled so far: to show a reader stops at its cap.
 */
export function streamedBody(
  chunkBytes: number,
  totalBytes = Infinity,
): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  const chunk = new Uint8Array(chunkBytes).fill(0x20);
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller): void {
      if (pulled >= totalBytes) return controller.close();
      pulled += chunk.length;
      controller.enqueue(chunk.slice());
    },
  }, { highWaterMark: 0 });
  return { body, pulled: () => pulled };
}
