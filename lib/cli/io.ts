import type { Io } from "./command.ts";

const encoder = new TextEncoder();

/** An {@link Io} over the process's stdout and stderr. */
export function processIo(): Io {
  return {
    out: (text) => writeAll(Deno.stdout, text),
    err: (text) => writeAll(Deno.stderr, text),
  };
}

function writeAll(stream: typeof Deno.stdout, text: string): void {
  const bytes = encoder.encode(text);
  let written = 0;
  while (written < bytes.length) written += stream.writeSync(bytes.subarray(written));
}

/** An {@link Io} that collects output, for tests. */
export function bufferIo(): Io & { stdout: string; stderr: string } {
  const io = {
    stdout: "",
    stderr: "",
    out(text: string): void {
      io.stdout += text;
    },
    err(text: string): void {
      io.stderr += text;
    },
  };
  return io;
}
